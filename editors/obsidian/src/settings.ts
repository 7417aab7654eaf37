// The plugin's settings, kept with its data (Plugin.saveData: the vault's
// .obsidian/plugins/docshelf/data.json). Pure: what loadData() gave, made whole and sane.

export interface DocshelfSettings {
  /** Base URL of `docshelf serve`. */
  serverUrl: string;
  /** Bearer token (`docshelf users create NAME`, or the admin's from the first `serve`). */
  token: string;
  /** How many hits a search shows. */
  searchLimit: number;
  /** Search only the notes of this vault (a path filter on the vault's folder). */
  vaultOnly: boolean;
  /** The vault's folder as the server indexed it, when not this vault's own (a copy elsewhere). */
  serverVaultPath: string;
  /** The docshelf executable that "Index this vault" runs: a name on PATH or a full path. */
  executable: string;
  /** DOCSHELF_HOME for that command: the server's home; empty for the default one. */
  home: string;
}

export const DEFAULT_SETTINGS: Readonly<DocshelfSettings> = {
  serverUrl: "http://127.0.0.1:8750",
  token: "",
  searchLimit: 20,
  vaultOnly: false,
  serverVaultPath: "",
  executable: "docshelf",
  home: "",
};

export const MAX_SEARCH_LIMIT = 100;

export function clampLimit(value: unknown): number {
  const n = typeof value === "number" ? value : Number.parseInt(String(value), 10);
  if (!Number.isFinite(n)) return DEFAULT_SETTINGS.searchLimit;
  return Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.round(n)));
}

/** Saved data (anything, or nothing) as whole settings: unknown keys dropped, bad values defaulted. */
export function withDefaults(data: unknown): DocshelfSettings {
  const saved = (data && typeof data === "object" ? data : {}) as Record<string, unknown>;
  const text = (key: keyof DocshelfSettings): string => {
    const value = saved[key];
    return typeof value === "string" ? value : (DEFAULT_SETTINGS[key] as string);
  };
  return {
    serverUrl: text("serverUrl").trim() || DEFAULT_SETTINGS.serverUrl,
    token: text("token").trim(),
    searchLimit: "searchLimit" in saved ? clampLimit(saved.searchLimit) : DEFAULT_SETTINGS.searchLimit,
    vaultOnly: typeof saved.vaultOnly === "boolean" ? saved.vaultOnly : DEFAULT_SETTINGS.vaultOnly,
    serverVaultPath: text("serverVaultPath").trim(),
    executable: text("executable").trim() || DEFAULT_SETTINGS.executable,
    home: text("home").trim(),
  };
}
