// The Library view: the caller's documents with their status; failed ones marked, with
// Retry in their context menu; a document opens in the workspace or the web page.

import * as vscode from "vscode";

import { type DocumentRecord } from "./api";
import { NotSignedIn } from "./messages";
import { openPlace } from "./open";
import { type Session } from "./session";
import { stageLabel } from "./upload";

export const FAILED_CONTEXT = "docshelf.document.failed";
export const DOCUMENT_CONTEXT = "docshelf.document";

export function documentItem(doc: DocumentRecord): vscode.TreeItem {
  const item = new vscode.TreeItem(doc.title || doc.id, vscode.TreeItemCollapsibleState.None);
  item.id = doc.id;
  const failed = doc.status === "failed";
  item.description =
    doc.status === "complete" ? doc.file_type : `${stageLabel(doc.status)} · ${doc.file_type}`;
  item.tooltip = `${doc.title}\n${doc.path}\nstatus: ${doc.status}`;
  item.contextValue = failed ? FAILED_CONTEXT : DOCUMENT_CONTEXT;
  item.iconPath = new vscode.ThemeIcon(
    failed ? "error" : doc.status === "complete" ? "file" : "sync",
    failed ? new vscode.ThemeColor("errorForeground") : undefined,
  );
  item.command = { command: "docshelf.library.open", title: "Open", arguments: [doc] };
  return item;
}

export class LibraryProvider implements vscode.TreeDataProvider<DocumentRecord> {
  private readonly changed = new vscode.EventEmitter<DocumentRecord | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly session: Session) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(doc: DocumentRecord): vscode.TreeItem {
    return documentItem(doc);
  }

  async getChildren(parent?: DocumentRecord): Promise<DocumentRecord[]> {
    if (parent) return [];
    let documents: DocumentRecord[];
    try {
      documents = await (await this.session.client()).allDocuments();
    } catch (error) {
      // Signed out: the view's welcome text offers Sign in; no error on top of it.
      if (!(error instanceof NotSignedIn)) void this.session.report(error);
      return [];
    }
    // Failed first (they need attention), then by title.
    return documents.sort(
      (a, b) =>
        Number(b.status === "failed") - Number(a.status === "failed") || a.title.localeCompare(b.title),
    );
  }

  async retry(doc?: DocumentRecord): Promise<void> {
    if (!doc) return;
    try {
      const client = await this.session.client();
      await client.retry(doc.id);
      this.refresh();
      const status = await this.settle(() => client.document(doc.id).then((d) => d.status));
      const done = status === "failed" ? "failed again" : status === "complete" ? "complete" : status;
      void vscode.window.showInformationMessage(`docshelf: ${doc.title} — retried, ${done}`);
    } catch (error) {
      await this.session.report(error);
    }
    this.refresh();
  }

  /** Polls a retried document's status until it is terminal (the tree refreshed on each change). */
  async settle(status: () => Promise<string>, everyMs = 1000, maxPolls = 600): Promise<string> {
    let last = "";
    for (let i = 0; i < maxPolls; i++) {
      const now = await status();
      if (now !== last) this.refresh();
      last = now;
      if (now === "complete" || now === "failed") return now;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    return last;
  }

  async open(doc?: DocumentRecord): Promise<void> {
    if (!doc) return;
    try {
      const client = await this.session.client();
      await openPlace(client, { documentId: doc.id, path: doc.path, fileType: doc.file_type });
    } catch (error) {
      await this.session.report(error);
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
