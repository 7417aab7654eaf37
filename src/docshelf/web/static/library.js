// The library view: the caller's documents — found by words of the title or path, by
// file type and state, sorted; the counts are exact (the library's and the matching
// set's, never the page's) — with status and pages without text, failures (uploads and
// folder files) with their reason and a retry only where a retry can succeed; one
// document's record, summary, type, concepts and key claims, ingest job, delete for an
// upload (confirmed in the page; a folder's file goes when it leaves the folder),
// "Open in Obsidian" for a vault's note, sections, links and backlinks.

import {
  TYPE_NAMES,
  append,
  debounce,
  failure,
  formatBytes,
  formatDate,
  h,
  replace,
  statusBadge,
} from "./dom.js";
import { obsidianHref, openHref } from "./open.js";

const PAGE = 200;

export class LibraryView {
  constructor(api, catalog, { onDeleted = () => {}, extraActions = () => null } = {}) {
    this.api = api;
    this.catalog = catalog;
    this.onDeleted = onDeleted;
    this.extraActions = extraActions; // what a document's detail offers besides (notebooks)
    this.total = 0;
    this.failures = [];
    this.failuresBox = document.getElementById("library-failures");
    this.body = document.querySelector("#library-table tbody");
    this.status = document.getElementById("library-status");
    this.detail = document.getElementById("doc-detail");
    this.more = document.getElementById("library-more");
    this.documents = [];
    this.selected = null;
    this.libraryTotal = 0;
    this.failedTotal = 0;
    this.sequence = 0;
    this.find = document.getElementById("library-q");
    this.show = document.getElementById("library-show");
    this.type = document.getElementById("library-type");
    this.sort = document.getElementById("library-sort");
    const again = debounce(() => this.load(0), 200);
    this.find.addEventListener("input", () => again());
    for (const select of [this.show, this.type, this.sort]) {
      select.addEventListener("change", () => again.flush());
    }
    document.getElementById("library-filter").addEventListener("submit", (event) => {
      event.preventDefault();
      again.flush();
    });
    document.getElementById("library-refresh").addEventListener("click", () => this.refresh());
    this.more.addEventListener("click", () => this.load(this.documents.length));
  }

  /** What the list is narrowed and sorted by, as /v1/documents takes it. */
  query() {
    return {
      q: this.find.value.trim(),
      status: this.show.value,
      filters: this.type.value ? { type: this.type.value } : {},
      sort: this.sort.value,
    };
  }

  get narrowed() {
    const q = this.query();
    return Boolean(q.q || q.status || q.filters.type);
  }

  async refresh() {
    await this.load(0);
    if (this.selected) await this.open(this.selected, { focus: false });
  }

  async load(offset) {
    const sequence = ++this.sequence;
    this.body.closest("table").setAttribute("aria-busy", "true");
    replace(this.status, h("span", { class: "pending" }, "Loading…"));
    const query = this.query();
    try {
      const [page, failures, failed, facets] = await Promise.all([
        this.api.documents({ limit: PAGE, offset, ...query }),
        offset ? null : this.api.failures(),
        offset ? null : this.api.documents({ limit: 1, status: "failed" }),
        offset ? null : this.api.facets(),
      ]);
      if (sequence !== this.sequence) return;
      this.documents = offset ? [...this.documents, ...page.documents] : page.documents;
      this.total = page.total ?? this.documents.length;
      this.libraryTotal = page.library_total ?? this.total;
      if (!offset) this.waiting = page.embedding_pending ?? 0;
      if (failures) {
        this.failures = failures.failures;
        this.failuresTotal = failures.total ?? failures.failures.length;
      }
      if (failed) this.failedTotal = failed.total;
      if (facets) this.renderTypes(facets.facets.type ?? {});
      for (const doc of page.documents) this.catalog.remember(doc);
      this.more.hidden = this.documents.length >= this.total;
      this.renderTable();
      this.renderFailures();
    } catch (error) {
      if (sequence !== this.sequence) return;
      replace(this.status, failure(error, () => this.load(offset)));
    } finally {
      if (sequence === this.sequence) this.body.closest("table").removeAttribute("aria-busy");
    }
  }

  /** The file types of the library, with their counts, as the type filter's choices. */
  renderTypes(counts) {
    const chosen = this.type.value;
    replace(
      this.type,
      h("option", { value: "" }, "Any file type"),
      Object.entries(counts).map(([type, n]) =>
        h("option", { value: type, selected: type === chosen }, `${TYPE_NAMES[type] ?? type} (${n})`),
      ),
    );
    if (chosen && !(chosen in counts)) this.type.append(h("option", { value: chosen, selected: true }, chosen));
  }

  /** Folder files not added that the words of the find box name (all when it is empty). */
  shownFailures() {
    const words = this.find.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    if (this.show.value === "complete" || this.type.value) return [];
    return this.failures.filter((f) => words.every((w) => f.path.toLowerCase().includes(w)));
  }

  renderTable() {
    const n = this.total;
    const all = this.libraryTotal;
    const shown = this.documents.length;
    const failed = this.failedTotal;
    const files = this.failuresTotal ?? this.failures.length;
    const plural = (k, word) => `${k} ${word}${k === 1 ? "" : "s"}`;
    const notice = this.notice ?? "";
    this.notice = null;
    const waiting = this.waiting ?? 0;
    const counts = [
      failed ? ` · ${failed} failed` : "",
      files ? ` · ${plural(files, "file")} not added` : "",
      waiting ? ` · ${all - waiting} of ${all} searchable by meaning (the rest by their words, until embedded)` : "",
    ].join("");
    const showing = shown < n ? ` · showing ${shown}` : "";
    this.body.closest("table").hidden = !shown;
    replace(
      this.status,
      notice,
      this.show.value === "failed"
        ? `${plural(n, "failed document")}${showing} · ${plural(files, "file")} not added ` +
            `(of ${plural(all, "document")})`
        : this.narrowed
        ? `${n} of ${plural(all, "document")} match${showing}${counts}`
        : n
          ? `${plural(n, "document")}${counts}${shown < n ? ` · showing ${shown}` : ""}`
          : files
            ? `No documents yet · ${plural(files, "file")} not added`
            : "No documents yet: add some on the Upload page, or with `docshelf add`.",
    );
    replace(
      this.body,
      this.documents.map((doc) =>
        h(
          "tr",
          { dataset: { documentId: doc.id }, class: doc.id === this.selected ? "selected" : "" },
          h(
            "th",
            { scope: "row" },
            h("a", { href: `#library/${encodeURIComponent(doc.id)}` }, doc.title || doc.id),
          ),
          h("td", {}, doc.file_type),
          h(
            "td",
            { class: "state" },
            statusBadge(doc.status),
            doc.status === "failed" && doc.error
              ? h("span", { class: "error failure-reason" }, doc.error)
              : null,
            doc.status === "failed" && doc.retryable === false
              ? h("span", { class: "muted" }, "Not retried: it would fail the same way.")
              : null,
          ),
          h(
            "td",
            { class: "num" },
            doc.page_count ? `${doc.pages_without_text} of ${doc.page_count}` : "—",
          ),
          h("td", { class: "num" }, formatBytes(doc.size_bytes)),
          h(
            "td",
            { class: "nowrap", title: formatDate(doc.added_at, { time: true }) },
            formatDate(doc.added_at),
          ),
        ),
      ),
    );
  }

  renderFailures() {
    const box = this.failuresBox;
    const failures = this.shownFailures();
    box.hidden = !failures.length;
    if (!failures.length) return;
    replace(
      box,
      h("h2", {}, "Files not added"),
      h(
        "p",
        { class: "hint" },
        "Files of your folders that could not be read. Fix a file and sync its folder " +
          "(`docshelf sync`) to add it.",
      ),
      h(
        "ul",
        { class: "failures" },
        failures.map((f) =>
          h(
            "li",
            {},
            h("code", { class: "failure-path", title: f.path }, f.label ?? f.path),
            h("span", { class: "error failure-reason" }, f.reason),
            f.retryable
              ? null
              : h("span", { class: "muted" }, "Not retried: these bytes can never be read."),
          ),
        ),
      ),
    );
  }

  async open(documentId, { focus = true } = {}) {
    if (documentId !== this.selected) this.following?.abort(); // another document now
    this.selected = documentId;
    for (const row of this.body.rows) {
      row.classList.toggle("selected", row.dataset.documentId === documentId);
    }
    this.detail.hidden = false;
    replace(this.detail, h("p", { class: "status" }, "Loading…"));
    let doc;
    try {
      doc = await this.api.document(documentId);
    } catch (error) {
      replace(this.detail, h("p", {}, failure(error, () => this.open(documentId, { focus }))));
      return;
    }
    this.catalog.remember(doc);
    await this.catalog.ensure([
      ...doc.links.flatMap((l) => l.document_ids),
      ...doc.backlinks.map((b) => b.document_id),
    ]);
    this.renderDetail(doc);
    if (focus) this.detail.querySelector("h2")?.focus();
  }

  renderDetail(doc) {
    const uploaded = String(doc.path).startsWith("upload://");
    const field = (label, value) => [h("dt", {}, label), h("dd", {}, value)];
    const docLink = (id) =>
      h("a", { href: `#library/${encodeURIComponent(id)}` }, this.catalog.title(id));
    replace(
      this.detail,
      h("h2", { tabindex: "-1" }, doc.title || doc.id),
      h(
        "div",
        { class: "detail-actions" },
        h("a", { class: "button", href: openHref(doc.id) }, "Open"),
        obsidianHref(doc.obsidian)
          ? h("a", { class: "button obsidian", href: obsidianHref(doc.obsidian) }, "Open in Obsidian")
          : null,
        uploaded
          ? this.deleteControl(doc)
          : h(
              "span",
              { class: "hint" },
              "From a folder: delete or move the file there, and the next sync removes it here.",
            ),
        this.extraActions(doc),
      ),
      doc.summary ? h("p", { class: "summary" }, doc.summary) : null,
      h(
        "dl",
        { class: "fields" },
        field("Status", statusBadge(doc.status)),
        field("Path", uploaded ? "Uploaded file" : h("code", {}, doc.path)),
        field("Type", doc.file_type),
        doc.page_count
          ? field("Pages", `${doc.page_count} (${doc.pages_without_text} without text)`)
          : null,
        field("Size", formatBytes(doc.size_bytes)),
        doc.document_type ? field("Document type", doc.document_type) : null,
        doc.concept_ids.length
          ? field(
              "Concepts",
              h("ul", { class: "concepts" }, doc.concept_ids.map((c) => h("li", { class: "tag" }, c))),
            )
          : null,
        doc.tags.length ? field("Tags", doc.tags.map((t) => `#${t}`).join(" ")) : null,
        field(
          "Chunks",
          `${doc.chunk_counts.section ?? 0} sections, ${doc.chunk_counts.snippet ?? 0} snippets`,
        ),
        field("Added", formatDate(doc.added_at, { time: true })),
        field("Id", h("code", {}, doc.id)),
      ),
      doc.job ? this.renderJob(doc) : null,
      doc.distillates.length ? h("h3", {}, "Key claims") : null,
      doc.distillates.length
        ? h(
            "ol",
            { class: "claims" },
            doc.distillates.map((d) =>
              h(
                "li",
                {},
                d.text,
                d.chunk_ids.map((chunk, i) => [
                  " ",
                  h(
                    "a",
                    { class: "cite", href: openHref(doc.id, chunk), "aria-label": `cited passage ${i + 1}` },
                    `[${i + 1}]`,
                  ),
                ]),
              ),
            ),
          )
        : null,
      h("h3", {}, "Links"),
      doc.links.length
        ? h(
            "ul",
            { class: "links" },
            doc.links.map((link) =>
              h(
                "li",
                {},
                h(
                  "span",
                  { class: "link-target" },
                  `${link.embed ? "!" : ""}[[${link.written ?? link.target}${link.heading ? `#${link.heading}` : ""}]]`,
                ),
                " → ",
                link.document_ids.length
                  ? link.document_ids.map((id, i) => [i ? ", " : "", docLink(id)])
                  : link.present
                    ? h("span", { class: "present" }, "in your vault (an attachment)")
                    : h("span", { class: "muted" }, "not in your library"),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No links."),
      h("h3", {}, "Backlinks"),
      doc.backlinks.length
        ? h(
            "ul",
            { class: "links" },
            doc.backlinks.map((b) => h("li", {}, docLink(b.document_id))),
          )
        : h("p", { class: "muted" }, "Nothing links here."),
      h("h3", {}, "Sections"),
      doc.sections.length
        ? h(
            "ol",
            { class: "sections" },
            doc.sections.map((s) => this.renderSection(s)),
          )
        : h("p", { class: "muted" }, "No sections yet."),
    );
  }

  renderJob(doc) {
    const job = doc.job;
    const state = h(
      "p",
      { class: "job-state", role: "status" },
      job.status === "complete" ? "complete" : `${job.status} at ${job.stage}`,
      job.attempts ? ` · ${job.attempts} attempt${job.attempts === 1 ? "" : "s"}` : "",
    );
    const box = h(
      "div",
      { class: `job job-${job.status}` },
      h("h3", {}, "Ingest job"),
      state,
      job.last_error ? h("p", { class: "error" }, job.last_error) : null,
    );
    if (job.status === "failed" && job.retryable === false) {
      append(box, h("p", { class: "muted" }, "Not retried: the same bytes would fail the same way."));
    }
    if (job.status === "failed" && job.retryable !== false) {
      const retry = async (button) => {
        button.disabled = true;
        box.querySelector(".failure")?.remove();
        try {
          await this.api.retry(doc.id);
        } catch (error) {
          button.disabled = false;
          append(box, failure(error, () => retry(button)));
          return;
        }
        box.querySelector(".error")?.remove();
        button.remove();
        await this.followJob(doc.id, state);
      };
      append(
        box,
        h("button", { type: "button", class: "retry", onclick: (event) => retry(event.currentTarget) }, "Retry"),
      );
    }
    return box;
  }

  /** After a retry: the job's stages in the detail as they go by, then, once it ends,
   * the document and its row as they are now (no Refresh needed). */
  async followJob(documentId, state) {
    this.following?.abort();
    const following = new AbortController();
    this.following = following;
    replace(state, "queued: retry requested");
    try {
      await this.api.stream(`/v1/documents/${encodeURIComponent(documentId)}/events`, {
        signal: following.signal,
        onEvent: ({ data }) => {
          const pct = data.progress_pct === null || data.progress_pct === undefined ? "" : ` (${data.progress_pct}%)`;
          const said = data.message && data.message !== data.stage ? `: ${data.message}` : "";
          replace(state, `${data.stage}${pct}${said}`);
        },
      });
    } catch (error) {
      if (following.signal.aborted) return;
      replace(state, failure(error, () => this.followJob(documentId, state)));
      return;
    }
    if (following.signal.aborted || this.selected !== documentId) return;
    await this.refresh();
  }

  /** Delete, confirmed in the page (a browser dialog would block it and every test). */
  deleteControl(doc) {
    const wrap = h("span", { class: "delete-control" });
    const ask = h(
      "button",
      {
        type: "button",
        class: "danger",
        onclick: () => {
          ask.hidden = true;
          append(
            wrap,
            h(
              "span",
              { class: "confirm", role: "group", "aria-label": "Confirm delete" },
              h("span", {}, "Delete this document from your library? "),
              h(
                "button",
                {
                  type: "button",
                  class: "danger",
                  onclick: async (event) => {
                    event.currentTarget.disabled = true;
                    const button = event.currentTarget;
                    wrap.querySelector(".failure")?.remove();
                    try {
                      await this.api.deleteDocument(doc.id);
                    } catch (error) {
                      button.disabled = false; // pressed again, it tries again
                      append(wrap, " ", failure(error, null));
                      return;
                    }
                    this.selected = null;
                    this.detail.hidden = true;
                    replace(this.detail);
                    this.catalog.docs.delete(doc.id);
                    this.notice = `Deleted “${doc.title || doc.id}”. `;
                    if (window.location.hash === "#library") await this.load(0);
                    else window.location.hash = "#library"; // route() reloads the table
                    this.onDeleted();
                  },
                },
                "Yes, delete",
              ),
              " ",
              h(
                "button",
                {
                  type: "button",
                  onclick: () => {
                    wrap.querySelector(".confirm")?.remove();
                    ask.hidden = false;
                    ask.focus();
                  },
                },
                "Cancel",
              ),
            ),
          );
          wrap.querySelector(".confirm button")?.focus();
        },
      },
      "Delete",
    );
    wrap.append(ask);
    return wrap;
  }

  renderSection(section) {
    const panel = h("div", { class: "context", hidden: true });
    const label = section.heading_path.join(" › ") || "(top of the document)";
    const button = h(
      "button",
      {
        type: "button",
        class: "quiet",
        "aria-expanded": "false",
        onclick: async () => {
          const open = button.getAttribute("aria-expanded") === "true";
          button.setAttribute("aria-expanded", String(!open));
          panel.hidden = open;
          if (open || panel.childElementCount) return;
          try {
            const context = await this.api.context(section.chunk_id, "parent-section");
            replace(panel, h("p", { class: "chunk-text" }, context.display.hit));
          } catch (error) {
            replace(panel, h("p", { class: "error" }, error.message));
          }
        },
      },
      label,
    );
    return h("li", {}, button, h("span", { class: "muted" }, ` ${section.tokens} tokens`), panel);
  }
}
