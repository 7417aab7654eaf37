// The search view: instant (debounced) results with highlighted matches and citations,
// grouped by document (a document's best hit leads, its other hits fold under it), score
// parts on demand, one-click context expansion, and filters over the whole library:
// file type, document type, concept, source, tag and year, with exact document counts
// from /v1/facets, choosable before a word is typed.

import {
  TYPE_NAMES,
  append,
  basename,
  debounce,
  failure,
  formatScore,
  h,
  highlighted,
  queryTerms,
  replace,
} from "./dom.js";
import { obsidianHref, openHref } from "./open.js";
import { hashFor, remember } from "./state.js";

const LIMIT = 20;
const WEAK_RESULT =
  "No close match: no hit holds half of your words or comes near their meaning. These are only the nearest passages.";
const DEBOUNCE_MS = 200;
const EXPANSIONS = [
  { mode: "snippet-window", label: "Window", title: "the hit with the snippets around it" },
  { mode: "parent-section", label: "Section", title: "the section the hit is in, around the hit" },
  {
    mode: "section-neighborhood",
    label: "Neighbourhood",
    title: "the section with the sections before and after it",
  },
];

export class SearchView {
  constructor(api, catalog) {
    this.api = api;
    this.catalog = catalog;
    this.form = document.getElementById("search-form");
    this.input = document.getElementById("q");
    this.mode = document.getElementById("mode");
    this.status = document.getElementById("search-status");
    this.results = document.getElementById("results");
    this.facets = document.getElementById("facets");
    this.filters = emptyFilters();
    this.notebook = ""; // search within this notebook (its id); "" for the whole library
    this.facetData = null;
    this.facetController = null;
    this.controller = null;
    this.sequence = 0;
    this.run = debounce(() => this.search(), DEBOUNCE_MS);
    this.input.addEventListener("input", () => {
      this.run();
      this.remember(false); // the words typed replace the address's (no entry per letter)
    });
    this.mode.addEventListener("change", () => {
      this.remember(true);
      this.run.flush();
    });
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.remember(true);
      this.run.flush();
    });
    // Keyboard: ↓ from the box to the first hit, ↑/↓ through the hits, Esc back to the box;
    // Enter opens the hit (a link).
    this.input.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowDown") return;
      const first = this.hitLinks()[0];
      if (!first) return;
      event.preventDefault();
      first.focus();
    });
    this.results.addEventListener("keydown", (event) => this.moveThroughHits(event));
    this.showIdle(); // facets and search come with the address's state (restore)
  }

  focus() {
    this.input.focus();
  }

  /** The citation links of the hits on the page, in order (folded ones left out). */
  hitLinks() {
    return [...this.results.querySelectorAll("a.citation")].filter((a) => a.offsetParent !== null);
  }

  moveThroughHits(event) {
    if (!["ArrowDown", "ArrowUp", "Escape"].includes(event.key)) return;
    if (event.key === "Escape") {
      event.preventDefault();
      this.input.focus();
      return;
    }
    const links = this.hitLinks();
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    const next = event.key === "ArrowDown" ? links[at + 1] : at === 0 ? this.input : links[at - 1];
    next?.focus();
  }

  /** This search's state (words, mode, filters, notebook) as the address says it. */
  hash() {
    const params = new URLSearchParams();
    params.set("q", this.input.value.trim());
    if (this.mode.value !== "hybrid") params.set("mode", this.mode.value);
    for (const [key, value] of Object.entries(this.requestFilters())) {
      for (const v of [value].flat()) params.append(key, v);
    }
    params.set("notebook", this.notebook);
    return hashFor("search", params);
  }

  remember(push) {
    remember(this.hash(), push);
  }

  /** The state an address gives (a reload, a link, Back or Forward): the search again,
   * unless the page shows it already. */
  restore(params, notebook) {
    const before = this.hash();
    this.input.value = params.get("q") ?? "";
    const mode = params.get("mode") ?? "hybrid";
    this.mode.value = ["hybrid", "lexical", "vector"].includes(mode) ? mode : "hybrid";
    this.filters = emptyFilters();
    for (const key of SINGLE) this.filters[key] = params.get(key) || null;
    for (const key of MULTI) this.filters[key] = new Set(params.getAll(key).filter(Boolean));
    this.notebook = notebook;
    if (this.hash() === before && this.shown) return;
    this.shown = true;
    this.loadFacets();
    this.run.flush();
  }

  get filtering() {
    const f = this.filters;
    return Boolean(
      f.type || f.doctype || f.source || f.date || f.tag.size || f.concept.size,
    );
  }

  requestFilters() {
    const filters = {};
    for (const key of SINGLE) if (this.filters[key]) filters[key] = this.filters[key];
    for (const key of MULTI) if (this.filters[key].size) filters[key] = [...this.filters[key]];
    return filters;
  }

  /** A filter chosen or cleared: new counts, and the search again (or the idle line). */
  filtersChanged() {
    this.remember(true);
    this.loadFacets();
    this.run.flush();
  }

  /** The library changed (an upload, a delete): counts again. */
  refresh() {
    this.loadFacets();
    if (this.input.value.trim()) this.run.flush();
  }

  showIdle() {
    const count = this.catalog.total;
    const matching = this.facetData?.total;
    const plural = (n) => `${n} document${n === 1 ? "" : "s"}`;
    replace(
      this.status,
      !count
        ? "Type to search. Your library is empty: add files on the Upload page."
        : this.notebook && matching !== undefined
          ? `${plural(matching)} in this notebook${this.filtering ? " match these filters" : ""}. Type to search them.`
          : this.filtering && matching !== undefined
          ? `${matching} of your ${plural(count)} match these filters. Type to search them.`
          : `Type to search your ${plural(count)}, or choose filters first.`,
    );
    replace(this.results);
  }

  async loadFacets() {
    this.facetController?.abort();
    const controller = new AbortController();
    this.facetController = controller;
    this.facets.setAttribute("aria-busy", "true");
    try {
      this.facetData = await this.api.facets(
        this.requestFilters(),
        controller.signal,
        this.notebook,
      );
    } catch (error) {
      if (controller.signal.aborted) return;
      replace(
        this.facets,
        h("h2", { class: "facets-title" }, "Filters"),
        failure(error, () => this.loadFacets()),
      );
      return;
    } finally {
      if (this.facetController === controller) this.facets.removeAttribute("aria-busy");
    }
    this.renderFacets(this.facetData);
    if (!this.input.value.trim()) this.showIdle();
  }

  async search() {
    const query = this.input.value.trim();
    this.controller?.abort();
    if (!query) {
      this.showIdle();
      return;
    }
    this.controller = new AbortController();
    const { signal } = this.controller;
    const sequence = ++this.sequence;
    const started = performance.now();
    this.results.setAttribute("aria-busy", "true");
    replace(this.status, h("span", { class: "pending" }, `Searching for “${query}”…`));
    const body = {
      query,
      limit: LIMIT,
      mode: this.mode.value,
      filters: this.requestFilters(),
      facets: false, // the facets are the library's (loadFacets), not the top hits'
    };
    if (this.notebook) body.notebook = this.notebook;
    try {
      const result = await this.api.search(body, signal);
      await this.catalog.ensure(result.hits.map((hit) => hit.document_id));
      if (sequence !== this.sequence) return;
      this.render(result, Math.round(performance.now() - started));
    } catch (error) {
      if (signal.aborted || sequence !== this.sequence) return;
      replace(this.results);
      replace(this.status, failure(error, () => this.run.flush()));
    } finally {
      if (sequence === this.sequence) this.results.removeAttribute("aria-busy");
    }
  }

  render(result, ms) {
    const terms = queryTerms(result.query);
    const n = result.hits.length;
    const groups = groupByDocument(result.hits);
    const docs = groups.length === n ? "" : ` in ${groups.length} document${groups.length === 1 ? "" : "s"}`;
    const summary = n
      ? `${n}${n === LIMIT ? "+" : ""} hit${n === 1 ? "" : "s"}${docs} · ${result.mode} · ${ms} ms`
      : `No hits for “${result.query}”${this.filtering ? " with these filters" : ""}.`;
    replace(this.status, summary);
    if (result.notice) append(this.status, h("span", { class: "notice" }, ` ${result.notice}`));
    if (result.weak) append(this.status, h("span", { class: "notice" }, ` ${WEAK_RESULT}`));
    this.weakResult = result.weak; // then no hit says it again
    let index = 0;
    replace(
      this.results,
      groups.map(([first, ...more]) => {
        const item = this.renderHit(first, index++, terms);
        if (more.length) item.append(this.renderMore(more, () => index++, terms));
        return item;
      }),
    );
  }

  /** A document's other hits, folded under its best one until asked for. */
  renderMore(hits, nextIndex, terms) {
    const list = h("ol", { class: "more-hits", hidden: true });
    const indices = hits.map(() => nextIndex());
    const label = `${hits.length} more in this document`;
    const toggle = h(
      "button",
      {
        type: "button",
        class: "quiet more-toggle",
        "aria-expanded": "false",
        onclick: () => {
          const open = toggle.getAttribute("aria-expanded") === "true";
          toggle.setAttribute("aria-expanded", String(!open));
          toggle.textContent = open ? label : "Fewer from this document";
          list.hidden = open;
          // Folded hits leave the page (their context panels and scores with them).
          if (open) replace(list);
          else replace(list, hits.map((hit, i) => this.renderHit(hit, indices[i], terms, "subhit")));
        },
      },
      label,
    );
    return h("div", { class: "more" }, toggle, list);
  }

  renderHit(hit, index, terms, kind = "hit") {
    const id = `hit-${index}`;
    const citation = hit.citation;
    const panel = h("section", {
      id: `${id}-context`,
      class: "context",
      "aria-label": `Context of ${citation.label}`,
      hidden: true,
    });
    const buttons = EXPANSIONS.map(({ mode, label, title }) =>
      h(
        "button",
        {
          type: "button",
          class: "chip",
          title: `Show ${title}`,
          "aria-expanded": "false",
          "aria-controls": panel.id,
          dataset: { mode },
          onclick: (event) => this.expand(hit, mode, event.currentTarget, buttons, panel, terms),
        },
        label,
      ),
    );
    // No score up front: a fused score ranks hits among themselves and means nothing alone.
    const scores = h(
      "details",
      { class: "scores" },
      h("summary", {}, "Scores"),
      h(
        "dl",
        {},
        h("dt", {}, "Lexical"),
        h("dd", {}, formatScore(hit.scores.lexical)),
        h("dt", {}, "Vector"),
        h("dd", {}, formatScore(hit.scores.vector)),
        h("dt", {}, "Fused"),
        h("dd", {}, formatScore(hit.scores.fused)),
      ),
    );
    const doc = this.catalog.docs.get(hit.document_id);
    return h(
      "li",
      { class: kind },
      h(
        "article",
        { "aria-labelledby": `${id}-title` },
        h(
          "header",
          { class: "hit-head" },
          h(
            "h2",
            { id: `${id}-title`, class: "hit-title" },
            h(
              "a",
              {
                // a text citation opens at its anchor (the inner heading it is cited
                // under); a page's citation opens at its page (of a snippet that runs
                // onto two, the one its words are on)
                href: openHref(
                  hit.document_id,
                  hit.chunk_id,
                  citation.page_start ?? null,
                  citation.page_start == null ? (citation.anchor ?? null) : null,
                ),
                class: "citation",
              },
              citation.label,
            ),
          ),
          citation.heading_path.length
            ? h("p", { class: "crumbs" }, citation.heading_path.join(" › "))
            : null,
          hit.weak && !this.weakResult ? h("p", { class: "notice weak" }, "Weak match") : null,
          hit.ocr
            ? h(
                "p",
                { class: "hint ocr", title: "This text was read from a scanned page by OCR" },
                `Read by OCR · ${Math.round(hit.ocr.confidence * 100)}% confidence`,
              )
            : null,
          doc?.tags?.length
            ? h("p", { class: "tags" }, doc.tags.map((t) => h("span", { class: "tag" }, `#${t}`)))
            : null,
        ),
        h("p", { class: "snippet" }, highlighted(hit.display_text, terms)),
        h(
          "div",
          { class: "hit-actions" },
          h("div", { class: "expand", role: "group", "aria-label": "Expand" }, buttons),
          obsidianHref(doc?.obsidian)
            ? h("a", { class: "obsidian", href: obsidianHref(doc.obsidian) }, "Open in Obsidian")
            : null,
          scores,
        ),
        panel,
      ),
    );
  }

  async expand(hit, mode, button, buttons, panel, terms) {
    const open = button.getAttribute("aria-expanded") === "true";
    for (const b of buttons) b.setAttribute("aria-expanded", "false");
    if (open) {
      panel.hidden = true;
      replace(panel);
      return;
    }
    button.setAttribute("aria-expanded", "true");
    panel.hidden = false;
    replace(panel, h("p", { class: "status" }, "Loading…"));
    try {
      const context = await this.api.context(
        hit.chunk_id,
        mode,
        hit.citation.anchor,
        this.notebook,
      );
      if (button.getAttribute("aria-expanded") !== "true") return;
      // The context as a person reads it: the hit tinted (only the hit), in view, with
      // what comes before and after it; "…" where the section goes on past the text.
      const { before, hit: at, after } = context.display;
      const part = (text, current = false) =>
        text
          ? h(
              "div",
              { class: `chunk${current ? " current" : ""}` },
              h("p", { class: "chunk-text" }, highlighted(text, terms)),
            )
          : null;
      const more = (cut) =>
        cut ? h("p", { class: "context-label", "aria-hidden": "true" }, "…") : null;
      const current = part(at, true);
      replace(
        panel,
        h(
          "p",
          { class: "context-label" },
          `${EXPANSIONS.find((e) => e.mode === mode).label} · ${context.citation.label}`,
        ),
        more(context.cut.before),
        part(before),
        current,
        part(after),
        more(context.cut.after),
      );
      if (current) {
        // the hit near the top of the panel, a little of what comes before it above
        const top = current.getBoundingClientRect().top - panel.getBoundingClientRect().top;
        panel.scrollTop += top - panel.clientHeight / 5;
      }
    } catch (error) {
      replace(panel, h("p", { class: "error" }, error.message));
    }
  }

  renderFacets(data) {
    const labels = data.labels ?? {};
    const single = (key) => ({
      active: (v) => this.filters[key] === v,
      toggle: (v) => {
        this.filters[key] = this.filters[key] === v ? null : v;
      },
      chosen: () => (this.filters[key] ? [this.filters[key]] : []),
    });
    const multi = (key) => ({
      active: (v) => this.filters[key].has(v),
      toggle: (v) => {
        if (!this.filters[key].delete(v)) this.filters[key].add(v);
      },
      chosen: () => [...this.filters[key]],
    });
    const groups = [
      { name: "type", legend: "File type", label: (v) => TYPE_NAMES[v] ?? v, ...single("type") },
      { name: "doctype", legend: "Document type", label: (v) => v, ...single("doctype") },
      {
        name: "concept",
        legend: "Concept",
        label: (v) => labels.concept?.[v] ?? v,
        ...multi("concept"),
      },
      {
        name: "source",
        legend: "Source",
        label: (v) => basename(labels.source?.[v] ?? this.catalog.sourceLabel(v)),
        ...single("source"),
      },
      { name: "tag", legend: "Tag", label: (v) => `#${v}`, ...multi("tag") },
      { name: "date", legend: "Year", label: (v) => v, ...single("date") },
    ];
    for (const group of groups) {
      group.values = Object.entries(data.facets?.[group.name] ?? {});
      // A chosen value stays in sight (and can be cleared) even when nothing matches it.
      for (const value of group.chosen()) {
        if (!group.values.some(([v]) => v === value)) group.values.push([value, 0]);
      }
    }
    const shown = groups.filter((g) => g.values.length);
    // Folded on a narrow screen until asked for (the hits come first), open on a wide one;
    // once the reader opens or folds it, it stays so.
    const open = this.facetsOpen ?? !window.matchMedia("(max-width: 800px)").matches;
    const chosen = groups.reduce((n, g) => n + g.chosen().length, 0);
    const box = h(
      "details",
      { class: "facets-box", open },
      h(
        "summary",
        { class: "facets-title" },
        "Filter your library",
        chosen ? h("span", { class: "chosen-count" }, ` · ${chosen} chosen`) : null,
      ),
    );
    box.addEventListener("toggle", () => {
      this.facetsOpen = box.open;
    });
    replace(this.facets, shown.length ? box : null);
    append(box, [
      shown.map((group) =>
        h(
          "fieldset",
          { class: "facet", dataset: { facet: group.name } },
          h("legend", {}, group.legend),
          h(
            "ul",
            {},
            group.values.slice(0, 12).map(([value, n]) =>
              h(
                "li",
                {},
                h(
                  "button",
                  {
                    type: "button",
                    class: "facet-value",
                    "aria-pressed": String(group.active(value)),
                    dataset: { value },
                    onclick: (event) => {
                      group.toggle(value);
                      // At once, not when the new counts come: the choice is seen now.
                      for (const b of event.currentTarget.closest("ul").querySelectorAll("button")) {
                        b.setAttribute("aria-pressed", String(group.active(b.dataset.value)));
                      }
                      this.filtersChanged();
                    },
                  },
                  h("span", { class: "facet-label" }, group.label(value)),
                  h(
                    "span",
                    { class: "count", "aria-label": `${n} document${n === 1 ? "" : "s"}` },
                    String(n),
                  ),
                ),
              ),
            ),
          ),
        ),
      ),
      this.filtering
        ? h(
            "button",
            {
              type: "button",
              class: "quiet clear-filters",
              onclick: () => {
                this.filters = emptyFilters();
                this.filtersChanged();
              },
            },
            "Clear filters",
          )
        : null,
    ]);
  }
}

const SINGLE = ["type", "doctype", "source", "date"];
const MULTI = ["tag", "concept"];

function emptyFilters() {
  return {
    type: null,
    doctype: null,
    source: null,
    date: null,
    tag: new Set(),
    concept: new Set(),
  };
}

/** Hits grouped by document, in the order of each document's best hit. */
function groupByDocument(hits) {
  const groups = new Map();
  for (const hit of hits) {
    const group = groups.get(hit.document_id);
    if (group) group.push(hit);
    else groups.set(hit.document_id, [hit]);
  }
  return [...groups.values()];
}
