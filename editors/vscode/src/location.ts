// Where a search hit (or a document) opens: a workspace file at the cited heading's line,
// or — for PDFs, Word files, uploads and files not in this workspace — the web page: a hit
// at its cited place (`#open/<document id>/<chunk id>`: a PDF's cited page with the cited
// lines boxed, a text at its cited heading), a document at its record (`#library/<id>`).

import * as path from "node:path";

import { type Citation } from "./api";

/** File types VS Code shows as text, so a heading's line means something. */
export const TEXT_TYPES: ReadonlySet<string> = new Set(["markdown", "text", "rst", "html"]);

export type Target =
  | { kind: "file"; path: string; fileType: string }
  | { kind: "web"; url: string; why: "upload" | "binary" | "elsewhere" };

export interface Place {
  documentId: string;
  path: string;
  fileType: string;
  /** The cited chunk, for a hit: the web page opens at it rather than at the record. */
  chunkId?: string;
  /** The citation's anchor in a text (the web page scrolls to it); not for a PDF's page. */
  anchor?: number | null;
}

export interface Workspace {
  folders: readonly string[];
  exists: (file: string) => boolean;
  /** The path module of the machine the folders are on (posix or win32). */
  pathApi?: path.PlatformPath;
}

export const UPLOAD_SCHEME = "upload://";

/**
 * The web page's address for a place. The token is not in it: the page signs in with the
 * token it keeps itself (asking for one the first time, then going on to this address), so
 * nothing secret reaches the browser's history, the server's logs or the OS's URL handler —
 * and the part after `#` is never sent to the server at all.
 */
export function webUrl(
  baseUrl: string,
  documentId: string,
  chunkId?: string,
  anchor?: number | null,
): string {
  const base = baseUrl.replace(/\/+$/, "");
  const e = encodeURIComponent;
  if (!chunkId) return `${base}/#library/${e(documentId)}`;
  // `#cite/<chunk id>`: the page finds the chunk's document itself.
  if (!documentId) return `${base}/#cite/${e(chunkId)}`;
  // `#open/<document>/<chunk>/<page>/<anchor>`, the page's own form (open.js `openHref`).
  const at = anchor === undefined || anchor === null ? "" : `//${e(String(anchor))}`;
  return `${base}/#open/${e(documentId)}/${e(chunkId)}${at}`;
}

/** The file type docshelf gives a path (by extension, as `docshelf.parse.FILE_TYPES`). */
export function fileTypeOf(file: string): string | undefined {
  const ext = path.extname(file).toLowerCase();
  return (
    {
      ".md": "markdown",
      ".markdown": "markdown",
      ".txt": "text",
      ".rst": "rst",
      ".pdf": "pdf",
      ".html": "html",
      ".htm": "html",
      ".docx": "docx",
    } as Record<string, string>
  )[ext];
}

/**
 * The workspace file a document path stands for: the path itself when it is inside a
 * workspace folder; otherwise the longest tail of it (`notes/raft.md`, then `raft.md`)
 * found under a workspace folder — the library may have been indexed on another machine,
 * or from another checkout.
 */
export function workspaceFile(documentPath: string, ws: Workspace): string | undefined {
  const p = ws.pathApi ?? path;
  const parts = documentPath.split(/[\\/]+/).filter(Boolean);
  if (parts.length === 0) return undefined;
  for (const folder of ws.folders) {
    const relative = p.relative(folder, documentPath);
    if (relative && !relative.startsWith("..") && !p.isAbsolute(relative)) {
      if (ws.exists(documentPath)) return documentPath;
    }
  }
  for (let start = 0; start < parts.length; start++) {
    const tail = parts.slice(start);
    if (tail.some((part) => part === "..")) continue;
    for (const folder of ws.folders) {
      const candidate = p.join(folder, ...tail);
      if (ws.exists(candidate)) return candidate;
      // The folder itself may be the tail's first part (`notes` opened, path `…/notes/a.md`).
      if (tail.length > 1 && p.basename(folder) === tail[0]) {
        const inside = p.join(folder, ...tail.slice(1));
        if (ws.exists(inside)) return inside;
      }
    }
  }
  return undefined;
}

export function resolvePlace(place: Place, baseUrl: string, ws: Workspace): Target {
  const web = (why: "upload" | "binary" | "elsewhere"): Target => ({
    kind: "web",
    url: webUrl(baseUrl, place.documentId, place.chunkId, place.anchor),
    why,
  });
  if (place.path.startsWith(UPLOAD_SCHEME)) return web("upload");
  if (!TEXT_TYPES.has(place.fileType)) return web("binary");
  const file = workspaceFile(place.path, ws);
  return file ? { kind: "file", path: file, fileType: place.fileType } : web("elsewhere");
}

/**
 * A hit's target; its file type comes from the cited path (a hit carries no file type).
 * On the web page it opens at the cited chunk: a PDF at its cited page, a text at its
 * anchor (a page citation has none: the page is the place).
 */
export function resolveCitation(
  documentId: string,
  citation: Citation,
  baseUrl: string,
  ws: Workspace,
  chunkId?: string,
): Target {
  const fileType = fileTypeOf(citation.path) ?? "unknown";
  const anchor = citation.page_start === null ? citation.anchor : null;
  return resolvePlace({ documentId, path: citation.path, fileType, chunkId, anchor }, baseUrl, ws);
}
