// The ask view: a question in, a grounded answer out, streamed sentence by sentence, every
// [n] a link to its numbered source; a source opens its passage in place.

import { readEventStream } from "./api.js";
import { failure, h, replace } from "./dom.js";
import { hashFor, remember } from "./state.js";

export class AskView {
  constructor(api) {
    this.api = api;
    this.form = document.getElementById("ask-form");
    this.input = document.getElementById("question");
    this.button = this.form.querySelector("button[type=submit]");
    this.status = document.getElementById("ask-status");
    this.answer = document.getElementById("answer");
    this.text = document.getElementById("answer-text");
    this.mode = document.getElementById("answer-mode");
    this.sources = document.getElementById("answer-sources");
    this.controller = null;
    this.notebook = ""; // ask within this notebook (its id); "" for the whole library
    this.asked = null; // the question and notebook the page shows the answer to
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.input.value.trim();
      const params = new URLSearchParams({ q: question, notebook: this.notebook });
      remember(hashFor("ask", params), true);
      this.ask(question);
    });
  }

  /** The state an address gives: its question asked (within its notebook), unless it
   * is the one answered on the page already. */
  restore(params, notebook) {
    this.notebook = notebook;
    const question = (params.get("q") ?? "").trim();
    this.input.value = question;
    if (!question || this.asked === `${notebook}\n${question}`) return;
    this.ask(question);
  }

  focus() {
    this.input.focus();
  }

  async ask(question) {
    this.controller?.abort();
    if (!question) {
      replace(this.status, "Type a question, then press Enter.");
      return;
    }
    this.controller = new AbortController();
    const { signal } = this.controller;
    this.asked = `${this.notebook}\n${question}`;
    this.answer.hidden = true;
    replace(this.text);
    replace(this.sources);
    replace(this.mode);
    replace(this.status, "Finding the passages that answer it…");
    this.button.disabled = true;
    this.answer.setAttribute("aria-busy", "true");
    let sentences = 0;
    try {
      const onEvent = ({ event, data }) => {
        if (event === "sources") {
          this.renderSources(data.sources);
          replace(this.status, data.sources.length ? "Writing the answer…" : "");
        } else if (event === "text") {
          this.answer.hidden = false;
          if (sentences++) this.text.append(" ");
          this.text.append(this.withCitations(data.text));
        } else if (event === "done") {
          this.finish(data, sentences);
        }
      };
      await this.api.askStream(question, signal, onEvent, this.notebook);
    } catch (error) {
      if (signal.aborted) return;
      replace(this.status, failure(error, () => this.ask(question)));
    } finally {
      if (!signal.aborted) {
        this.button.disabled = false;
        this.answer.removeAttribute("aria-busy");
      }
    }
  }

  finish(answer, sentences) {
    if (!sentences) {
      replace(this.text, this.withCitations(answer.answer));
    }
    this.answer.hidden = false;
    // Only sources the answer cites stay listed, in their own numbers.
    const cited = new Set(answer.citations.map((c) => String(c.n)));
    for (const item of [...this.sources.children]) {
      if (!cited.has(item.dataset.n)) item.remove();
    }
    const how =
      answer.mode === "extractive"
        ? "Sentences taken from your documents (no language model is configured)."
        : `Written by ${answer.mode}, from the sources below.`;
    replace(this.mode, answer.notice ? `${how} ${answer.notice}` : how);
    replace(this.status, answer.citations.length ? "" : "Nothing in your documents answers this.");
  }

  /** Text with each [n] made a link to source n. */
  withCitations(text) {
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const match of text.matchAll(/\[(\d+)\]/g)) {
      fragment.append(document.createTextNode(text.slice(last, match.index)));
      fragment.append(
        h(
          "a",
          { href: `#ask-source-${match[1]}`, class: "cite", "aria-label": `source ${match[1]}` },
          `[${match[1]}]`,
        ),
      );
      last = match.index + match[0].length;
    }
    fragment.append(document.createTextNode(text.slice(last)));
    return fragment;
  }

  renderSources(sources) {
    replace(
      this.sources,
      sources.map((source) => {
        const passage = h("div", { class: "passage", hidden: true });
        const toggle = h(
          "button",
          {
            type: "button",
            class: "chip",
            "aria-expanded": "false",
            onclick: () => this.togglePassage(source, toggle, passage),
          },
          "Show passage",
        );
        return h(
          "li",
          { id: `ask-source-${source.n}`, value: String(source.n), dataset: { n: String(source.n) } },
          h("a", { class: "citation", href: `#cite/${encodeURIComponent(source.chunk_id)}` }, source.label),
          " ",
          source.citation?.heading_path?.length
            ? h("span", { class: "crumbs" }, source.citation.heading_path.join(" › "))
            : null,
          " ",
          toggle,
          passage,
        );
      }),
    );
  }

  async togglePassage(source, toggle, passage) {
    const open = toggle.getAttribute("aria-expanded") === "true";
    toggle.setAttribute("aria-expanded", String(!open));
    toggle.textContent = open ? "Show passage" : "Hide passage";
    passage.hidden = open;
    if (open || passage.childElementCount) return;
    replace(passage, h("p", { class: "status" }, "Loading…"));
    try {
      const context = await this.api.context(source.chunk_id, "snippet-window");
      const cited = context.chunks.find((c) => c.chunk_id === source.chunk_id);
      replace(
        passage,
        h(
          "div",
          { class: "chunk current" },
          cited?.heading_path.length
            ? h("p", { class: "crumbs" }, cited.heading_path.join(" › "))
            : null,
          h("p", { class: "chunk-text" }, context.display.hit), // the passage as it reads
        ),
      );
    } catch (error) {
      replace(passage, h("p", { class: "error" }, error.message));
    }
  }
}
