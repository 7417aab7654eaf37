// The bearer token lives in VS Code's SecretStorage (the OS keychain where there is one),
// one per server URL, never in settings. Only the slice of SecretStorage used is required.

import type { SecretStorage } from "vscode";

export type Secrets = Pick<SecretStorage, "get" | "store" | "delete">;

export const TOKEN_KEY_PREFIX = "docshelf.token:";

export class TokenStore {
  constructor(private readonly secrets: Secrets) {}

  private key(baseUrl: string): string {
    return TOKEN_KEY_PREFIX + baseUrl;
  }

  async get(baseUrl: string): Promise<string | undefined> {
    const token = await this.secrets.get(this.key(baseUrl));
    return token || undefined;
  }

  async set(baseUrl: string, token: string): Promise<void> {
    const trimmed = token.trim();
    if (!trimmed) throw new Error("The token is empty");
    await this.secrets.store(this.key(baseUrl), trimmed);
  }

  async clear(baseUrl: string): Promise<void> {
    await this.secrets.delete(this.key(baseUrl));
  }
}
