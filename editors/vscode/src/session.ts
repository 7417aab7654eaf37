// The connection: the server URL from the settings, the token from SecretStorage, a client
// for both; "docshelf: Sign in" / "Sign out"; errors shown with the fix they need.

import * as vscode from "vscode";

import { DocshelfClient, type Fetch, normalizeBaseUrl } from "./api";
import { NotSignedIn, SIGN_IN, explain } from "./messages";
import { TokenStore } from "./tokens";

export const SIGNED_IN_CONTEXT = "docshelf.signedIn";

export class Session {
  private readonly tokens: TokenStore;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fired after signing in or out, and when the server URL changes. */
  readonly onDidChange = this.changed.event;

  constructor(
    secrets: vscode.SecretStorage,
    private readonly fetchImpl?: Fetch,
  ) {
    this.tokens = new TokenStore(secrets);
  }

  baseUrl(): string {
    const raw = vscode.workspace.getConfiguration("docshelf").get<string>("serverUrl");
    return normalizeBaseUrl(raw || "http://127.0.0.1:8750");
  }

  setting<T>(key: string, fallback: T): T {
    return vscode.workspace.getConfiguration("docshelf").get<T>(key) ?? fallback;
  }

  /** A client for the configured server; NotSignedIn when there is no token for it. */
  async client(): Promise<DocshelfClient> {
    const baseUrl = this.baseUrl();
    const token = await this.tokens.get(baseUrl);
    if (!token) throw new NotSignedIn(baseUrl);
    return new DocshelfClient({ baseUrl, token, fetch: this.fetchImpl });
  }

  async refreshContext(): Promise<void> {
    let signedIn: boolean;
    try {
      signedIn = (await this.tokens.get(this.baseUrl())) !== undefined;
    } catch {
      signedIn = false; // a bad URL in the settings: not signed in anywhere
    }
    await vscode.commands.executeCommand("setContext", SIGNED_IN_CONTEXT, signedIn);
  }

  /** Asks for a token, checks it against the server, keeps it only if the server takes it. */
  async signIn(): Promise<boolean> {
    const baseUrl = this.baseUrl();
    const token = await vscode.window.showInputBox({
      title: `Sign in to docshelf at ${baseUrl}`,
      prompt:
        "An access token from `docshelf users create NAME` (or the admin's, printed by the first `docshelf serve`)",
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : "Paste the token"),
    });
    if (token === undefined) return false;
    const client = new DocshelfClient({ baseUrl, token: token.trim(), fetch: this.fetchImpl });
    try {
      await client.verify();
    } catch (error) {
      await this.report(error);
      return false;
    }
    await this.tokens.set(baseUrl, token);
    await this.refreshContext();
    this.changed.fire();
    void vscode.window.showInformationMessage(`docshelf: signed in to ${baseUrl}`);
    return true;
  }

  async signOut(): Promise<void> {
    const baseUrl = this.baseUrl();
    await this.tokens.clear(baseUrl);
    await this.refreshContext();
    this.changed.fire();
    void vscode.window.showInformationMessage(`docshelf: signed out of ${baseUrl}`);
  }

  /** Shows an error with the fix; a refused or missing token offers "Sign in". */
  async report(error: unknown): Promise<void> {
    let baseUrl: string;
    try {
      baseUrl = this.baseUrl();
    } catch (bad) {
      await vscode.window.showErrorMessage(`docshelf: ${(bad as Error).message}`);
      return;
    }
    const message = explain(error, baseUrl);
    if (!message.action) {
      await vscode.window.showErrorMessage(message.text);
      return;
    }
    const chosen = await vscode.window.showErrorMessage(message.text, SIGN_IN);
    if (chosen === SIGN_IN) await this.signIn();
  }

  dispose(): void {
    this.changed.dispose();
  }
}
