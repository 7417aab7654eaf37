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

/** What the last search showed, for the next "docshelf: Search" on the same server. */
export interface LastSearch {
  baseUrl: string;
  query: string;
  /** The hits shown for `query`; undefined when the box closed before they came. */
  hits: Hit[] | undefined;
  /** The chunk of the hit opened last: it is the active row when the box opens again. */
  opened: string | undefined;
}

/**
 * Keeps the last search for as long as the extension runs: opening a hit closes the quick
 * pick (VS Code gives the editor the focus), and running Search again brings back the
 * query, its hits and the hit last opened. Kept for one server URL, and forgotten on
 * sign-in and sign-out, so one token's hits are never shown to another.
 */
export class SearchMemory {
  private last: LastSearch | undefined;

  recall(baseUrl: string): LastSearch | undefined {
    return this.last?.baseUrl === baseUrl ? this.last : undefined;
  }

  keep(last: LastSearch | undefined): void {
    this.last = last;
  }

  forget(): void {
    this.last = undefined;
  }
}

function hitsTitle(n: number): string {
  return `docshelf: Search — ${n ? `${n} hit${n === 1 ? "" : "s"}` : "no hits"}`;
}

export async function searchCommand(session: Session, memory = new SearchMemory()): Promise<void> {
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
  // The query the shown items answer ("" for none), and the last hit opened.
  let answered = "";
  let shown: Hit[] | undefined;
  let opened: string | undefined;
  const last = memory.recall(client.baseUrl);
  if (last) {
    // Set before the listener below: showing them again asks the server nothing.
    pick.value = last.query;
    if (last.hits) {
      pick.items = last.hits.map(hitItem);
      pick.activeItems = pick.items.filter((item) => item.hit.chunk_id === last.opened).slice(0, 1);
      pick.title = hitsTitle(last.hits.length);
      answered = last.query;
      shown = last.hits;
      opened = last.opened;
    }
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inflight: AbortController | undefined;
  const query = (text: string): void => {
    inflight?.abort();
    if (timer) clearTimeout(timer);
    pick.busy = false;
    // The items already answer it (e.g. VS Code echoing the value set above).
    if (text === answered && shown !== undefined) return;
    if (!text.trim()) {
      pick.items = [];
      answered = text;
      shown = [];
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
          pick.title = hitsTitle(result.hits.length);
          answered = text;
          shown = result.hits;
          opened = undefined;
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
      opened = chosen.hit.chunk_id;
      pick.hide();
      const { hit } = chosen;
      openCitation(client, hit.document_id, hit.chunk_id, hit.citation, hit.text).catch((error: unknown) =>
        session.report(error),
      );
    });
    pick.onDidHide(() => {
      inflight?.abort();
      if (timer) clearTimeout(timer);
      const value = pick.value;
      memory.keep(
        value.trim()
          ? {
              baseUrl: client.baseUrl,
              query: value,
              hits: value === answered ? shown : undefined,
              opened: value === answered ? opened : undefined,
            }
          : undefined,
      );
      pick.dispose();
      resolve();
    });
  });
  if (last && !last.hits) query(last.query); // closed before its hits came: ask again
  pick.show();
  await done;
}
