// What the user reads when something goes wrong: each message names the fix.

import { ApiError, Unreachable } from "./api";

export const SIGN_IN = "Sign in";

export interface UserMessage {
  text: string;
  /** The action that fixes it, if there is one to offer. */
  action?: typeof SIGN_IN;
}

export class NotSignedIn extends Error {
  constructor(readonly baseUrl: string) {
    super(
      `Not signed in to ${baseUrl}: run "docshelf: Sign in" with a token from \`docshelf users create NAME\`.`,
    );
    this.name = "NotSignedIn";
  }
}

export function explain(error: unknown, baseUrl: string): UserMessage {
  if (error instanceof NotSignedIn) return { text: `docshelf: ${error.message}`, action: SIGN_IN };
  if (error instanceof Unreachable) {
    return {
      text:
        `docshelf: cannot reach ${baseUrl} (${error.reason}). Is \`docshelf serve\` running ` +
        `there? The address is the "docshelf.serverUrl" setting.`,
    };
  }
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return {
        text: `docshelf: ${baseUrl} refused the token (unknown or revoked). Sign in with a token from \`docshelf users create NAME\`.`,
        action: SIGN_IN,
      };
    }
    return { text: `docshelf: ${error.message} (${error.status} ${error.code})` };
  }
  return { text: `docshelf: ${error instanceof Error ? error.message : String(error)}` };
}
