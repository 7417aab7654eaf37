// Where a search hit (or a document) opens: a workspace file at the cited heading's line,
// or — for PDFs, Word files, uploads and files not in this workspace — the web page at the
// document (`#library/<id>`, the place the web page offers for one document).

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
}

export interface Workspace {
  folders: readonly string[];
  exists: (file: string) => boolean;
  /** The path module of the machine the folders are on (posix or win32). */
  pathApi?: path.PlatformPath;
}

export const UPLOAD_SCHEME = "upload://";

/** The web page's view of one document. */
export function webUrl(baseUrl: string, documentId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/#library/${encodeURIComponent(documentId)}`;
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
    url: webUrl(baseUrl, place.documentId),
    why,
  });
  if (place.path.startsWith(UPLOAD_SCHEME)) return web("upload");
  if (!TEXT_TYPES.has(place.fileType)) return web("binary");
  const file = workspaceFile(place.path, ws);
  return file ? { kind: "file", path: file, fileType: place.fileType } : web("elsewhere");
}

/** A hit's target; its file type comes from the cited path (a hit carries no file type). */
export function resolveCitation(
  documentId: string,
  citation: Citation,
  baseUrl: string,
  ws: Workspace,
): Target {
  const fileType = fileTypeOf(citation.path) ?? "unknown";
  return resolvePlace({ documentId, path: citation.path, fileType }, baseUrl, ws);
}
