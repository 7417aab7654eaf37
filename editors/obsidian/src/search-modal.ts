// "docshelf: Search": a suggest modal with live results — each hit its title, heading path
// (and page) and snippet; choosing one opens the note at the cited heading.

import { type App, SuggestModal } from "obsidian";

import { type Hit, type SearchFilters } from "./api";
import { Latest } from "./debounce";
import { type Host } from "./host";
import { explain, hitSnippet, hitTitle, hitTrail } from "./present";

export const PROMPT = "Type to search your docshelf library.";

export class SearchModal extends SuggestModal<Hit> {
  private readonly latest: Latest<Hit[]>;
  /** The hits on screen: what a query overtaken by a newer one leaves showing. */
  private shown: Hit[] = [];
  private filters: Promise<SearchFilters | undefined> | undefined;

  constructor(
    app: App,
    private readonly host: Host,
  ) {
    super(app);
    this.limit = host.settings.searchLimit;
    this.emptyStateText = PROMPT;
    this.setPlaceholder("Search your library (words, a phrase in quotes, tag:x …)");
    this.setInstructions([
      { command: "↑↓", purpose: "to move" },
      { command: "↵", purpose: "to open at its heading" },
      { command: "esc", purpose: "to dismiss" },
    ]);
    this.latest = new Latest((query, signal) => this.search(query, signal));
  }

  async getSuggestions(query: string): Promise<Hit[]> {
    if (!query.trim()) {
      this.latest.cancel();
      this.emptyStateText = PROMPT;
      this.shown = [];
      return [];
    }
    try {
      const hits = await this.latest.request(query);
      if (hits === undefined) return this.shown; // a newer query is on its way
      this.shown = hits;
    } catch (error) {
      this.emptyStateText = explain(error);
      this.shown = [];
    }
    return this.shown;
  }

  private async search(query: string, signal: AbortSignal): Promise<Hit[]> {
    const client = this.host.client();
    // Asked once per modal (the server's sources); a failure is asked again next time.
    this.filters ??= this.host.searchFilters(client).catch((error: unknown) => {
      this.filters = undefined;
      throw error;
    });
    const result = await client.search(query, this.host.settings.searchLimit, await this.filters, signal);
    this.emptyStateText = result.hits.length
      ? ""
      : [`No hits for “${query}”.`, result.notice].join(" ").trim();
    return result.hits;
  }

  renderSuggestion(hit: Hit, el: HTMLElement): void {
    el.addClass("docshelf-hit");
    el.createDiv({ cls: "docshelf-hit-title", text: hitTitle(hit) });
    const trail = hitTrail(hit);
    if (trail) el.createDiv({ cls: "docshelf-trail", text: trail });
    el.createDiv({ cls: "docshelf-snippet", text: hitSnippet(hit) });
  }

  onChooseSuggestion(hit: Hit): void {
    void this.host.openCitation(hit.citation, hit.chunk_id, hit.document_id, hit.text);
  }

  onClose(): void {
    this.latest.cancel();
    super.onClose();
  }
}
