// The Library view: the caller's documents with their status, grouped by source and
// folder (library-tree.ts); failed ones first and marked, with Retry in their context menu;
// a document opens in the workspace or the web page.

import * as vscode from "vscode";

import { type DocumentRecord, type SourceRecord } from "./api";
import { type GroupNode, type LibraryNode, childNodes, groupDescription, rootNodes } from "./library-tree";
import { NotSignedIn } from "./messages";
import { openPlace } from "./open";
import { type Session } from "./session";
import { stageLabel } from "./upload";

export const FAILED_CONTEXT = "docshelf.document.failed";
export const DOCUMENT_CONTEXT = "docshelf.document";
export const GROUP_CONTEXT = "docshelf.group";

const GROUP_ICONS: Record<GroupNode["role"], string> = {
  failed: "error",
  source: "root-folder",
  folder: "folder",
  other: "folder-library",
  uploads: "cloud-upload",
  type: "files",
};

export function groupItem(group: GroupNode): vscode.TreeItem {
  const item = new vscode.TreeItem(
    group.label,
    group.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
  );
  item.id = group.id;
  item.description = groupDescription(group);
  item.tooltip = group.tooltip;
  item.contextValue = GROUP_CONTEXT;
  item.iconPath = new vscode.ThemeIcon(
    GROUP_ICONS[group.role],
    group.role === "failed" ? new vscode.ThemeColor("errorForeground") : undefined,
  );
  return item;
}

/** The document a command was given: a tree node (context menu) or a record (click). */
export function documentOf(target: LibraryNode | DocumentRecord | undefined): DocumentRecord | undefined {
  if (!target) return undefined;
  if ("kind" in target) return target.kind === "document" ? target.doc : undefined;
  return target;
}

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

export class LibraryProvider implements vscode.TreeDataProvider<LibraryNode> {
  private readonly changed = new vscode.EventEmitter<LibraryNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly session: Session) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: LibraryNode): vscode.TreeItem {
    if (node.kind === "group") return groupItem(node);
    const item = documentItem(node.doc);
    item.id = node.id; // a failed document is in two places: Failed, and its folder
    return item;
  }

  /**
   * The top: the documents and sources, loaded when the view (re)draws it; below, a group's
   * children, made from that list only when the group is expanded.
   */
  async getChildren(parent?: LibraryNode): Promise<LibraryNode[]> {
    if (parent) return parent.kind === "group" ? childNodes(parent) : [];
    let documents: DocumentRecord[];
    let sources: SourceRecord[];
    try {
      const client = await this.session.client();
      [documents, sources] = await Promise.all([client.allDocuments(), client.sources()]);
    } catch (error) {
      // Signed out: the view's welcome text offers Sign in; no error on top of it.
      if (!(error instanceof NotSignedIn)) void this.session.report(error);
      return [];
    }
    return rootNodes(documents, sources);
  }

  async retry(target?: LibraryNode | DocumentRecord): Promise<void> {
    const doc = documentOf(target);
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

  async open(target?: LibraryNode | DocumentRecord): Promise<void> {
    const doc = documentOf(target);
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
