// "docshelf: Search": a quick pick with live results (title, heading path, page, snippet);
// choosing one opens the workspace file at the cited heading, or the web page.

import * as vscode from "vscode";

import { type DocshelfClient, type Hit, isAbort } from "./api";
import { openCitation } from "./open";
import { plainSnippet } from "./plain";
import { type Session } from "./session";

/** Wait after the last key before asking the server (a newer query cancels the older). */
export const DEBOUNCE_MS = 200;

export interface HitItem extends vscode.QuickPickItem {
  hit: Hit;
}

export function pageText(hit: Hit): string {
  const { page_start: start, page_end: end } = hit.citation;
  if (start === null) return "";
  return end !== null && end !== start ? `pp. ${start}–${end}` : `p. ${start}`;
}

export function hitItem(hit: Hit): HitItem {
  const where = [hit.citation.heading_path.join(" › "), pageText(hit)].filter(Boolean).join(" · ");
  const snippet = plainSnippet(hit.text);
  return {
    label: hit.citation.title || hit.citation.label,
    description: where,
    detail: snippet.length > 200 ? `${snippet.slice(0, 199)}…` : snippet,
    alwaysShow: true, // the server ranked them: the quick pick must not filter them again
    hit,
  };
}

export async function searchCommand(session: Session): Promise<void> {
  let client: DocshelfClient;
  try {
    client = await session.client();
  } catch (error) {
    await session.report(error);
    return;
  }
  const limit = session.setting<number>("searchLimit", 20);
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.title = "docshelf: Search";
  pick.placeholder = "Search your library (words, phrases, tag:x …)";
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inflight: AbortController | undefined;
  const query = (text: string): void => {
    inflight?.abort();
    if (timer) clearTimeout(timer);
    if (!text.trim()) {
      pick.items = [];
      pick.busy = false;
      return;
    }
    timer = setTimeout(() => {
      const abort = new AbortController();
      inflight = abort;
      pick.busy = true;
      client
        .search(text, limit, abort.signal)
        .then((result) => {
          if (abort.signal.aborted) return;
          pick.items = result.hits.map(hitItem);
          const n = result.hits.length;
          pick.title = `docshelf: Search — ${n ? `${n} hit${n === 1 ? "" : "s"}` : "no hits"}`;
        })
        .catch(async (error: unknown) => {
          if (isAbort(error) || abort.signal.aborted) return;
          pick.hide();
          await session.report(error);
        })
        .finally(() => {
          if (inflight === abort) pick.busy = false;
        });
    }, DEBOUNCE_MS);
  };
  const done = new Promise<void>((resolve) => {
    pick.onDidChangeValue(query);
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0] ?? pick.activeItems[0];
      if (!chosen) return;
      pick.hide();
      const { hit } = chosen;
      openCitation(client, hit.document_id, hit.chunk_id, hit.citation, hit.text).catch((error: unknown) =>
        session.report(error),
      );
    });
    pick.onDidHide(() => {
      inflight?.abort();
      if (timer) clearTimeout(timer);
      pick.dispose();
      resolve();
    });
  });
  pick.show();
  await done;
}
