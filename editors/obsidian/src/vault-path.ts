// Where a hit opens: the vault's note at the cited heading, a vault PDF at the cited page,
// or — for uploads, files outside this vault and formats Obsidian does not open — docshelf's
// web page at the cited place. docshelf cites a folder's file by the absolute path it
// indexed (`/home/me/vault/notes/raft.md`); Obsidian names a file by its path inside the
// vault (`notes/raft.md`). Pure: the plugin hands in the vault's roots and a lookup.

export type Why = "upload" | "outside" | "format";

export type Target =
  | { kind: "note"; path: string }
  | { kind: "pdf"; path: string; page: number | null }
  | { kind: "web"; url: string; why: Why };

export interface VaultView {
  /**
   * Folders the vault's files are indexed under: the vault's own folder (and its real
   * path, if a symlink leads to it), and the folder the server indexed, when the library
   * was made from a copy of the vault elsewhere.
   */
  roots: readonly string[];
  /** Whether the vault holds a file at this vault path. */
  exists: (vaultPath: string) => boolean;
}

export const UPLOAD_SCHEME = "upload://";

/** A Windows path: a drive letter, or a UNC share. Compared without regard to case. */
function isWindowsPath(p: string): boolean {
  return /^[A-Za-z]:[\\/]/.test(p) || /^\\\\/.test(p);
}

function segments(p: string): string[] {
  return p.split(/[\\/]+/).filter((s) => s !== "" && s !== ".");
}

/**
 * The vault path (`notes/raft.md`, always with `/`) of `documentPath` when it lies under
 * `root`, else undefined. A path that climbs out with `..` is never inside.
 */
export function vaultRelative(documentPath: string, root: string): string | undefined {
  if (!root.trim() || documentPath.includes("://")) return undefined;
  const windows = isWindowsPath(root) || isWindowsPath(documentPath);
  const base = segments(root);
  const doc = segments(documentPath);
  if (doc.includes("..") || base.includes("..") || doc.length <= base.length) return undefined;
  // An absolute POSIX root must meet an absolute path (and a relative one a relative one).
  if (!windows && root.startsWith("/") !== documentPath.startsWith("/")) return undefined;
  const same = (a: string, b: string): boolean => (windows ? a.toLowerCase() === b.toLowerCase() : a === b);
  if (!base.every((part, i) => same(part, doc[i]))) return undefined;
  return doc.slice(base.length).join("/");
}

/** The vault file a document path stands for, if the vault holds it. */
export function vaultFile(documentPath: string, vault: VaultView): string | undefined {
  for (const root of vault.roots) {
    const relative = vaultRelative(documentPath, root);
    if (relative !== undefined && vault.exists(relative)) return relative;
  }
  return undefined;
}

/** The extension of a path, lower case, with its dot (`.md`), or "". */
export function extensionOf(p: string): string {
  const name = p.split(/[\\/]/).pop() ?? "";
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot).toLowerCase() : "";
}

/**
 * The web page's address for a cited chunk. The token is not in it: the page signs in with
 * the token it keeps itself, and the part after `#` is never sent to the server at all.
 */
export function webUrl(
  baseUrl: string,
  chunkId: string,
  documentId?: string,
  anchor?: number | null,
): string {
  const base = baseUrl.replace(/\/+$/, "");
  const e = encodeURIComponent;
  // `#cite/<chunk id>`: the page finds the chunk's document itself.
  if (!documentId) return `${base}/#cite/${e(chunkId)}`;
  // `#open/<document>/<chunk>//<anchor>`, the page's own form (open.js `openHref`).
  const at = anchor === undefined || anchor === null ? "" : `//${e(String(anchor))}`;
  return `${base}/#open/${e(documentId)}/${e(chunkId)}${at}`;
}

export interface Cited {
  path: string;
  page_start: number | null;
  anchor?: number | null;
}

/** Where a cited chunk opens (`documentId` is known for a search hit, not for an answer's source). */
export function resolveCitation(
  citation: Cited,
  chunkId: string,
  documentId: string | undefined,
  baseUrl: string,
  vault: VaultView,
): Target {
  // On the web page a PDF opens at its cited page; a text at its anchor.
  const anchor = citation.page_start === null ? citation.anchor : null;
  const web = (why: Why): Target => ({ kind: "web", url: webUrl(baseUrl, chunkId, documentId, anchor), why });
  if (citation.path.startsWith(UPLOAD_SCHEME)) return web("upload");
  const file = vaultFile(citation.path, vault);
  if (file === undefined) return web("outside");
  const ext = extensionOf(file);
  if (ext === ".md") return { kind: "note", path: file };
  if (ext === ".pdf") return { kind: "pdf", path: file, page: citation.page_start };
  return web("format");
}

/**
 * The search filter that keeps to this vault's notes: its source, when the vault's folder
 * is one; else its folder as a path prefix (the vault inside a larger folder that is).
 */
export function vaultFilter(
  sources: readonly { id: string; path: string }[],
  roots: readonly string[],
): { source: string } | { path: string } | undefined {
  const trimmed = (p: string): string => p.replace(/[\\/]+$/, "");
  for (const root of roots) {
    const source = sources.find((s) => trimmed(s.path) === trimmed(root));
    if (source) return { source: source.id };
  }
  for (const root of roots) {
    const within = sources.some((s) => vaultRelative(root, s.path) !== undefined);
    if (within) return { path: `${trimmed(root)}${isWindowsPath(root) ? "\\" : "/"}` };
  }
  return undefined;
}
