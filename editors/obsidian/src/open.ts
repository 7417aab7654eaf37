// Opening a target inside Obsidian: a note at the cited heading's line (found in the note
// as it is now), a PDF at its cited page (Obsidian's `#page=N`), or docshelf's web page.

import { type App, MarkdownView, Notice, TFile } from "obsidian";

import { citedLine } from "./headings";
import { whyWeb } from "./present";
import { type Target } from "./vault-path";

/** Opens the target; for a note, at the line of `headingPath` (or where the snippet begins). */
export async function openTarget(
  app: App,
  target: Target,
  headingPath: readonly string[],
  snippet: string,
  openExternal: (url: string) => void,
): Promise<void> {
  if (target.kind === "web") {
    openExternal(target.url);
    new Notice(whyWeb(target.why));
    return;
  }
  if (target.kind === "pdf") {
    const link = target.page === null ? target.path : `${target.path}#page=${target.page}`;
    await app.workspace.openLinkText(link, "", false);
    return;
  }
  const file = app.vault.getAbstractFileByPath(target.path);
  if (!(file instanceof TFile)) throw new Error(`The vault has no note at ${target.path}`);
  const line = citedLine(await app.vault.cachedRead(file), headingPath, snippet);
  const leaf = app.workspace.getLeaf(false);
  // The reading view scrolls to `line`; the editor also gets its cursor there.
  await leaf.openFile(file, { active: true, eState: { line } });
  const view = leaf.view;
  if (view instanceof MarkdownView && view.getMode() === "source") {
    const at = { line, ch: 0 };
    view.editor.setCursor(at);
    view.editor.scrollIntoView({ from: at, to: at }, true);
  }
}
