// docshelf for VS Code: the entry point wires the commands, the Library view and the
// uploads' status-bar item to the session. The logic lives in the plain modules.

import * as vscode from "vscode";

import { AskPanel } from "./ask-ui";
import { type DocumentRecord } from "./api";
import { LibraryProvider } from "./library";
import { type LibraryNode } from "./library-tree";
import { SearchMemory, searchCommand } from "./search-ui";
import { Session } from "./session";
import { Uploads } from "./uploads-ui";

export function activate(context: vscode.ExtensionContext): void {
  const session = new Session(context.secrets);
  const library = new LibraryProvider(session);
  const uploads = new Uploads(session, () => library.refresh());
  const ask = new AskPanel(session);
  const searches = new SearchMemory();
  const view = vscode.window.createTreeView("docshelf.library", { treeDataProvider: library });
  const command = (id: string, run: (...args: never[]) => unknown): vscode.Disposable =>
    vscode.commands.registerCommand(id, run);
  context.subscriptions.push(
    session,
    library,
    uploads,
    ask,
    view,
    command("docshelf.signIn", () => session.signIn()),
    command("docshelf.signOut", () => session.signOut()),
    // The explorer's entries are the same commands, titled with "docshelf:" (menus show
    // no category), and hidden from the palette.
    ...["docshelf.addFile", "docshelf.explorer.addFile"].map((id) =>
      command(id, (clicked?: vscode.Uri, selected?: vscode.Uri[]) => uploads.addFiles(clicked, selected)),
    ),
    ...["docshelf.addFolder", "docshelf.explorer.addFolder"].map((id) =>
      command(id, (folder?: vscode.Uri) => uploads.addFolder(folder)),
    ),
    command("docshelf.search", () => searchCommand(session, searches)),
    command("docshelf.ask", () => ask.ask()),
    command("docshelf.library.refresh", () => library.refresh()),
    // From the context menu, the tree's node; from a click, the document (item.command).
    command("docshelf.library.retry", (target?: LibraryNode | DocumentRecord) => library.retry(target)),
    command("docshelf.library.open", (target?: LibraryNode | DocumentRecord) => library.open(target)),
    session.onDidChange(() => {
      searches.forget(); // another token (or none): its hits are not this one's
      library.refresh();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("docshelf.serverUrl")) {
        void session.refreshContext();
        library.refresh();
      }
    }),
  );
  void session.refreshContext();
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
