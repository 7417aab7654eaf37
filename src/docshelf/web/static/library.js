// The library view: the caller's documents with status and pages without text; one
// document's record, ingest job (with a retry button when it failed), sections,
// links and backlinks.

import { append, formatBytes, formatDate, h, replace, statusBadge } from "./dom.js";

const PAGE = 200;

export class LibraryView {
  constructor(api, catalog) {
    this.api = api;
    this.catalog = catalog;
    this.body = document.querySelector("#library-table tbody");
    this.status = document.getElementById("library-status");
    this.detail = document.getElementById("doc-detail");
    this.more = document.getElementById("library-more");
    this.documents = [];
    this.selected = null;
    document.getElementById("library-refresh").addEventListener("click", () => this.refresh());
    this.more.addEventListener("click", () => this.load(this.documents.length));
  }

  async refresh() {
    await this.load(0);
    if (this.selected) await this.open(this.selected, { focus: false });
  }

  async load(offset) {
    replace(this.status, "Loading…");
    try {
      const page = await this.api.documents({ limit: PAGE, offset });
      this.documents = offset ? [...this.documents, ...page.documents] : page.documents;
      for (const doc of page.documents) this.catalog.remember(doc);
      this.more.hidden = page.documents.length < PAGE;
      this.renderTable();
    } catch (error) {
      replace(this.status, h("span", { class: "error" }, error.message));
    }
  }

  renderTable() {
    const n = this.documents.length;
    const failed = this.documents.filter((d) => d.status === "failed").length;
    replace(
      this.status,
      n
        ? `${n} document${n === 1 ? "" : "s"}${failed ? ` · ${failed} failed` : ""}`
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
          h("td", { class: "nowrap" }, statusBadge(doc.status)),
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

  async open(documentId, { focus = true } = {}) {
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
      replace(this.detail, h("p", { class: "error" }, error.message));
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
        "dl",
        { class: "fields" },
        field("Status", statusBadge(doc.status)),
        field("Path", uploaded ? "Uploaded file" : h("code", {}, doc.path)),
        field("Type", doc.file_type),
        doc.page_count
          ? field("Pages", `${doc.page_count} (${doc.pages_without_text} without text)`)
          : null,
        field("Size", formatBytes(doc.size_bytes)),
        doc.tags.length ? field("Tags", doc.tags.map((t) => `#${t}`).join(" ")) : null,
        field(
          "Chunks",
          `${doc.chunk_counts.section ?? 0} sections, ${doc.chunk_counts.snippet ?? 0} snippets`,
        ),
        field("Added", formatDate(doc.added_at, { time: true })),
        field("Id", h("code", {}, doc.id)),
      ),
      doc.job ? this.renderJob(doc) : null,
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
                  `[[${link.target}${link.heading ? `#${link.heading}` : ""}]]`,
                ),
                " → ",
                link.document_ids.length
                  ? link.document_ids.map((id, i) => [i ? ", " : "", docLink(id)])
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
    const box = h(
      "div",
      { class: `job job-${job.status}` },
      h("h3", {}, "Ingest job"),
      h(
        "p",
        {},
        `${job.status} at ${job.stage}`,
        job.attempts ? ` · ${job.attempts} attempt${job.attempts === 1 ? "" : "s"}` : "",
      ),
      job.last_error ? h("p", { class: "error" }, job.last_error) : null,
    );
    if (job.status === "failed") {
      append(
        box,
        h(
          "button",
          {
            type: "button",
            class: "retry",
            onclick: async (event) => {
              event.currentTarget.disabled = true;
              try {
                await this.api.retry(doc.id);
              } catch (error) {
                append(box, h("p", { class: "error" }, error.message));
              }
              await this.refresh();
            },
          },
          "Retry",
        ),
      );
    }
    return box;
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
            replace(panel, h("p", { class: "chunk-text" }, context.text));
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
