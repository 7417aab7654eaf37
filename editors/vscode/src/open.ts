// Opening a target: a workspace file at the cited line, or the web page in the browser.

import * as fs from "node:fs";

import * as vscode from "vscode";

import { type Citation, type DocshelfClient } from "./api";
import { citedLine } from "./headings";
import { type Place, type Target, type Workspace, resolveCitation, resolvePlace } from "./location";

export function currentWorkspace(): Workspace {
  return {
    folders: (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === "file")
      .map((f) => f.uri.fsPath),
    exists: (file) => {
      try {
        return fs.statSync(file).isFile();
      } catch {
        return false;
      }
    },
  };
}

/** Opens the target; for a file, at the line of `headingPath` (or of the snippet). */
export async function openTarget(
  target: Target,
  headingPath: readonly string[] = [],
  snippet = "",
): Promise<void> {
  if (target.kind === "web") {
    await vscode.env.openExternal(vscode.Uri.parse(target.url));
    return;
  }
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(target.path));
  const line = citedLine(document.getText(), target.fileType, headingPath, snippet);
  const at = new vscode.Position(Math.min(line, Math.max(0, document.lineCount - 1)), 0);
  await vscode.window.showTextDocument(document, {
    selection: new vscode.Range(at, at),
    preview: true,
  });
}

/**
 * Opens a cited chunk: the workspace file at its line, or the web page at the chunk (an
 * empty `documentId` lets the page find the chunk's document).
 */
export function openCitation(
  client: DocshelfClient,
  documentId: string,
  chunkId: string,
  citation: Citation,
  snippet = "",
): Promise<void> {
  const target = resolveCitation(documentId, citation, client.baseUrl, currentWorkspace(), chunkId);
  return openTarget(target, citation.heading_path, snippet);
}

export function openPlace(client: DocshelfClient, place: Place): Promise<void> {
  return openTarget(resolvePlace(place, client.baseUrl, currentWorkspace()));
}
