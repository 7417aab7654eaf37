// Notebooks: named sets of the caller's sources and documents (with filters) to search and
// ask within. The picker in the top bar chooses one for Search and Ask (and puts it in the
// address); the Notebooks view makes them, shares them read-only with other users of the
// server and deletes them. A notebook never shows anyone a document they cannot read: the
// server narrows every search by the caller's own access.

import { basename, failure, h, replace } from "./dom.js";

export class NotebookPicker {
  /** `onPick(id)` when the reader chooses a notebook ("" for the whole library). */
  constructor(api, onPick) {
    this.api = api;
    this.select = document.getElementById("notebook");
    this.box = document.getElementById("notebook-pick");
    this.notebooks = [];
    this.current = "";
    this.select.addEventListener("change", () => onPick(this.select.value));
  }

  async load() {
    this.notebooks = (await this.api.notebooks()).notebooks;
    this.render();
  }

  render() {
    const known = this.notebooks.some((n) => n.notebook_id === this.current);
    replace(
      this.select,
      h("option", { value: "" }, "Whole library"),
      this.notebooks.map((n) =>
        h("option", { value: n.notebook_id }, n.read_only ? `${n.name} (shared)` : n.name),
      ),
      // a notebook in the address that this reader cannot see is still shown, as such
      this.current && !known ? h("option", { value: this.current }, "Unknown notebook") : null,
    );
    this.select.value = this.current;
    this.box.hidden = false;
  }

  show(id) {
    this.current = id || "";
    this.render();
  }

  name(id) {
    return this.notebooks.find((n) => n.notebook_id === id)?.name ?? null;
  }
}

export class NotebooksView {
  constructor(api, catalog, picker, { onChanged = () => {} } = {}) {
    this.api = api;
    this.catalog = catalog;
    this.picker = picker;
    this.onChanged = onChanged;
    this.list = document.getElementById("notebooks-list");
    this.status = document.getElementById("notebooks-status");
    this.form = document.getElementById("notebook-form");
    this.sourcesBox = document.getElementById("notebook-sources");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create();
    });
  }

  focus() {
    document.getElementById("notebook-name").focus();
  }

  async load() {
    this.renderSources();
    replace(this.status, "Loading…");
    try {
      await this.picker.load();
    } catch (error) {
      replace(this.status, failure(error, () => this.load()));
      return;
    }
    replace(this.status, this.picker.notebooks.length ? "" : "No notebooks yet: make one below.");
    replace(this.list, this.picker.notebooks.map((n) => this.renderNotebook(n)));
    // How many times the list was drawn: what is typed into a card is lost when it is
    // drawn again, so a script (the browser tests) waits for the draw it caused.
    this.list.dataset.loads = String(Number(this.list.dataset.loads ?? 0) + 1);
  }

  renderSources() {
    const sources = [...this.catalog.sources.values()];
    replace(
      this.sourcesBox,
      sources.length
        ? sources.map((s) =>
            h(
              "label",
              { class: "check" },
              h("input", { type: "checkbox", name: "source", value: s.id }),
              ` ${basename(s.path)}`,
            ),
          )
        : h("p", { class: "hint" }, "You have no folders here: name documents from the Library, or filters."),
    );
  }

  async create() {
    const data = new FormData(this.form);
    const body = {
      name: String(data.get("name") ?? "").trim(),
      sources: data.getAll("source").map(String),
      filters: filtersOf(String(data.get("filters") ?? "")),
    };
    const error = document.getElementById("notebook-error");
    replace(error);
    try {
      const made = await this.api.createNotebook(body);
      this.form.reset();
      await this.load();
      this.onChanged(made.notebook_id);
    } catch (err) {
      replace(error, err.message);
    }
  }

  renderNotebook(n) {
    const count = (k, one) => `${k} ${one}${k === 1 ? "" : "s"}`;
    const what = [
      count(n.sources.length, "folder"),
      count(n.documents.length, "document"),
      Object.keys(n.filters).length ? `filters ${filterWords(n.filters).join(", ")}` : null,
    ].filter(Boolean);
    const item = h(
      "li",
      { class: "card notebook", dataset: { notebook: n.notebook_id } },
      h(
        "h2",
        {},
        h("a", { href: `#search?notebook=${encodeURIComponent(n.notebook_id)}` }, n.name),
        n.read_only ? h("span", { class: "hint" }, " · shared with you, read only") : null,
      ),
      h("p", { class: "hint" }, what.join(" · ")),
      h(
        "p",
        { class: "notebook-actions" },
        h("a", { class: "button", href: `#search?notebook=${encodeURIComponent(n.notebook_id)}` }, "Search"),
        h("a", { class: "button", href: `#ask?notebook=${encodeURIComponent(n.notebook_id)}` }, "Ask"),
      ),
    );
    if (!n.read_only) item.append(this.shareForm(n), this.deleteButton(n));
    return item;
  }

  shareForm(n) {
    const input = h("input", {
      type: "text",
      name: "user",
      autocomplete: "off",
      "aria-label": `User to share ${n.name} with`,
      placeholder: "user name",
    });
    const message = h("span", { class: "status", role: "status" });
    const readers = n.shared_with.map((uid) =>
      h(
        "li",
        {},
        uid,
        " ",
        h(
          "button",
          {
            type: "button",
            class: "quiet",
            onclick: async () => {
              await this.api.unshareNotebook(n.notebook_id, uid);
              this.load();
            },
          },
          "Stop sharing",
        ),
      ),
    );
    return h(
      "form",
      {
        class: "share",
        onsubmit: async (event) => {
          event.preventDefault();
          const user = input.value.trim();
          if (!user) return;
          try {
            await this.api.shareNotebook(n.notebook_id, user);
            this.load();
          } catch (err) {
            replace(message, err.message);
          }
        },
      },
      h("label", {}, "Share read-only with ", input),
      " ",
      h("button", { type: "submit" }, "Share"),
      " ",
      message,
      readers.length ? h("ul", { class: "readers", "aria-label": "Shared with" }, readers) : null,
    );
  }

  deleteButton(n) {
    return h(
      "button",
      {
        type: "button",
        class: "quiet danger",
        onclick: async () => {
          if (!window.confirm(`Delete the notebook “${n.name}”? Its documents stay.`)) return;
          await this.api.deleteNotebook(n.notebook_id);
          await this.load();
          this.onChanged(null);
        },
      },
      "Delete notebook",
    );
  }
}

const REPEATABLE = new Set(["tag", "concept"]);

/** "tag=thesis type=pdf" as a search's filters object ({tag: ["thesis"], type: "pdf"});
 * the server names what it refuses. */
export function filtersOf(text) {
  const filters = {};
  for (const word of text.split(/[\s,]+/).filter(Boolean)) {
    const at = word.search(/[=:]/);
    const key = at < 0 ? word : word.slice(0, at).toLowerCase();
    const value = at < 0 ? "" : word.slice(at + 1);
    if (REPEATABLE.has(key)) (filters[key] ??= []).push(value);
    else filters[key] = value;
  }
  return filters;
}

/** A notebook's filters as the words a person writes them in. */
export function filterWords(filters) {
  return Object.entries(filters).flatMap(([key, value]) =>
    [value].flat().map((v) => `${key}=${v}`),
  );
}

/** A document's "Add to notebook" control (the library's detail panel). */
export function addToNotebook(api, picker, documentId) {
  const own = picker.notebooks.filter((n) => !n.read_only);
  if (!own.length) return null;
  const select = h(
    "select",
    { "aria-label": "Notebook" },
    own.map((n) => h("option", { value: n.notebook_id }, n.name)),
  );
  const message = h("span", { class: "status", role: "status" });
  return h(
    "form",
    {
      class: "add-to-notebook",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const nb = await api.changeNotebook(select.value, { add_documents: [documentId] });
          replace(message, `Added to ${nb.name}.`);
          picker.load();
        } catch (err) {
          replace(message, err.message);
        }
      },
    },
    select,
    " ",
    h("button", { type: "submit" }, "Add to notebook"),
    " ",
    message,
  );
}
