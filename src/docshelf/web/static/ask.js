// The ask view: a question in, a grounded answer out, streamed sentence by sentence. Every
// [n] of a source the answer cites opens that source at its cited place (a PDF's page with
// the cited lines boxed, a note at its heading) in a panel beside the answer — below it on a
// narrow screen — without leaving it: `#ask?q=…&source=n` is the answer with source n open,
// so Back (or Close, or Esc) shuts the panel and the answer is there as it was, never asked
// again. A source's label opens the open view; *Show passage* its snippet in place.

import { failure, h, replace } from "./dom.js";
import { OpenView } from "./open.js";
import { hashFor, remember } from "./state.js";

/** `text` as nodes: each `[n]` whose n is one of `numbers` (the answer's sources) made
 * `link(n)`; any other bracketed number — a paper's own reference, "[4]" — stays text. */
export function withCitations(text, numbers, link) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const n = Number(match[1]);
    if (!numbers.has(n)) continue;
    fragment.append(document.createTextNode(text.slice(last, match.index)));
    fragment.append(link(n));
    last = match.index + match[0].length;
  }
  fragment.append(document.createTextNode(text.slice(last)));
  return fragment;
}

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
    this.layout = document.getElementById("ask-layout");
    this.panel = document.getElementById("ask-cited");
    this.panelTitle = document.getElementById("ask-cited-title");
    this.panelHead = this.panel.querySelector(".cited-head");
    this.opener = new OpenView(api, {
      root: document.getElementById("ask-cited-body"),
      prefix: "ask-cited",
      embedded: true,
      frame: this.panelFrame(),
    });
    this.controller = null;
    this.notebook = ""; // ask within this notebook (its id); "" for the whole library
    this.asked = null; // the question and notebook the page shows the answer to
    this.question = "";
    this.numbered = new Map(); // the answer's sources by number
    this.shown = null; // the number of the source open beside the answer
    this.wanted = null; // the source the address opens once the sources come
    this.opened = null; // the [n] that opened the panel: the focus goes back there
    this.scrolled = 0; // where the window was when it opened: it goes back there too
    this.focusNext = null;
    // The conversation: a question asked here follows the answer shown (its turns above it,
    // searched with them); a question from an address, or New conversation, starts one.
    this.conversation = null;
    this.thread = document.getElementById("ask-thread");
    this.newButton = document.getElementById("ask-new");
    this.newButton.addEventListener("click", () => this.startOver());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.input.value.trim();
      const params = new URLSearchParams({ q: question, notebook: this.notebook });
      remember(hashFor("ask", params), true);
      this.ask(question, null, true);
    });
    document.getElementById("ask-cited-close").addEventListener("click", () => this.closeSource());
    this.panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeSource();
      }
    });
  }

  /** The state an address gives: its question asked (within its notebook), unless it
   * is the one answered on the page already; its source open beside it. */
  restore(params, notebook) {
    if (notebook !== this.notebook) this.startOver(false);
    this.notebook = notebook;
    const question = (params.get("q") ?? "").trim();
    this.input.value = question;
    const source = Number(params.get("source")) || null;
    if (!question || this.asked === `${notebook}\n${question}`) {
      const was = this.shown;
      this.showSource(question ? source : null);
      if (this.shown === was) return;
      // Back to the answer (the browser scrolls it back to where it was): the focus on the
      // [n] that opened the source; Forward: the source, in view
      if (this.shown !== null) this.revealPanel();
      this.focusNext = this.shown ? this.panelTitle : this.opened;
      return;
    }
    this.ask(question, source);
  }

  focus() {
    const next = this.focusNext;
    this.focusNext = null;
    if (next?.isConnected && !next.closest("[hidden]")) next.focus();
    else if (!document.getElementById("ask-view").contains(document.activeElement)) {
      // come back from another view: to the source open beside the answer, or the question
      (this.shown === null ? this.input : this.panelTitle).focus();
    }
  }

  /** A new conversation: the turns above the answer go (and the answer, when asked). */
  startOver(clear = true) {
    this.conversation = null;
    replace(this.thread);
    this.thread.hidden = true;
    this.newButton.hidden = true;
    if (clear) {
      this.answer.hidden = true;
      this.asked = null;
      this.input.value = "";
      this.input.focus();
    }
  }

  async ask(question, source = null, follow = false) {
    this.controller?.abort();
    this.showSource(null);
    this.wanted = source;
    if (!question) {
      replace(this.status, "Type a question, then press Enter.");
      return;
    }
    if (follow && this.conversation && !this.answer.hidden) {
      // the answer shown becomes a turn above: the new question follows it up
      this.thread.append(
        h(
          "li",
          { class: "turn" },
          h("p", { class: "turn-question" }, this.question),
          h("p", { class: "turn-answer" }, this.text.textContent),
        ),
      );
      this.thread.hidden = false;
    } else if (!follow || !this.conversation) {
      this.startOver(false);
    }
    this.controller = new AbortController();
    const { signal } = this.controller;
    this.asked = `${this.notebook}\n${question}`;
    this.question = question;
    this.numbered = new Map();
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
      const conversation = this.conversation ?? "new";
      await this.api.askStream(question, signal, onEvent, this.notebook, conversation);
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
    if (answer.conversation) {
      this.conversation = answer.conversation;
      this.newButton.hidden = false;
    }
    if (!sentences) {
      replace(this.text, this.withCitations(answer.answer));
    }
    this.answer.hidden = false;
    // Only sources the answer cites stay listed, in their own numbers.
    const cited = new Set(answer.citations.map((c) => String(c.n)));
    for (const item of [...this.sources.children]) {
      if (!cited.has(item.dataset.n)) item.remove();
    }
    // a number no citation has is no link (the answer's text says which it cites)
    for (const link of [...this.text.querySelectorAll("a.cite")]) {
      if (!cited.has(link.dataset.n)) link.replaceWith(link.textContent);
    }
    const how =
      answer.mode === "extractive"
        ? "Sentences taken from your documents (no language model is configured)."
        : `Written by ${answer.mode}, from the sources below.`;
    // no passage answers it: the answer says so, with its notice (what the library never
    // mentions) where it is read, and its sources are only the closest
    const answered = answer.answered !== false;
    replace(this.mode, answer.notice && answered ? `${how} ${answer.notice}` : how);
    this.answer.dataset.answered = String(answered);
    const why = answer.notice ? ` ${answer.notice}` : "";
    replace(
      this.status,
      answered ? "" : `Not in your library.${why} The passages below are only the closest.`,
    );
  }

  /** Text with each [n] of one of the answer's sources a link that opens it beside. */
  withCitations(text) {
    return withCitations(text, new Set(this.numbered.keys()), (n) => this.citeLink(n));
  }

  /** `[n]`: a link to the answer with source n open (so a new tab opens it too); a click
   * opens it beside the answer. */
  citeLink(n) {
    return h(
      "a",
      {
        href: this.sourceHash(n),
        class: "cite",
        "aria-label": `Source ${n}`,
        title: this.numbered.get(n)?.label,
        "aria-controls": "ask-cited",
        "aria-expanded": String(this.shown === n),
        dataset: { n: String(n) },
        onclick: (event) => {
          if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
          event.preventDefault();
          this.openSource(n, event.currentTarget);
        },
      },
      `[${n}]`,
    );
  }

  /** The address of the answer shown, with source `n` open (none: `null`). */
  sourceHash(n) {
    const params = new URLSearchParams({ q: this.question, notebook: this.notebook });
    if (n !== null) params.set("source", String(n));
    return hashFor("ask", params);
  }

  /** Source n beside the answer, and the focus on it. Opening it is a step in the history
   * (Back closes it); another source opened over it takes its place there. */
  openSource(n, from) {
    this.opened = from;
    if (this.shown !== n) {
      if (this.shown === null) {
        this.scrolled = window.scrollY;
        history.pushState({ askSource: true }, "", this.sourceHash(n));
      } else history.replaceState(history.state, "", this.sourceHash(n));
      this.showSource(n);
    }
    this.revealPanel();
    this.panelTitle.focus({ preventScroll: true });
  }

  /** The panel in view: beside the answer, the window scrolled so all of it shows (the
   * answer's start with it); below the answer, scrolled to. */
  revealPanel() {
    const { top } = this.panel.getBoundingClientRect();
    if (getComputedStyle(this.panel).position === "sticky") {
      const gap = parseFloat(getComputedStyle(this.panel).top) || 0;
      if (top > gap + 1) window.scrollBy({ top: top - gap, behavior: "instant" });
    } else if (top < 0 || top > window.innerHeight / 3) {
      this.panel.scrollIntoView({ block: "start" });
    }
  }

  /** Close the source: the step back to the answer when opening it made one. */
  closeSource() {
    if (this.shown === null) return;
    if (history.state?.askSource) {
      history.back(); // the address without the source: route() closes it, focus and all
      return;
    }
    remember(this.sourceHash(null), false);
    this.showSource(null);
    window.scrollTo({ top: this.scrolled, behavior: "instant" });
    if (this.opened?.isConnected) this.opened.focus();
    else this.input.focus();
  }

  /** Source `n` open beside the answer (`null`: the panel closed). */
  showSource(n) {
    const source = n === null ? undefined : this.numbered.get(n);
    if (n !== null && !source) {
      this.wanted = n; // its sources are still to come
      n = null;
    }
    if (n === this.shown) return;
    this.shown = n;
    this.panel.hidden = n === null;
    this.layout.classList.toggle("with-source", n !== null);
    for (const link of this.text.querySelectorAll("a.cite")) {
      link.setAttribute("aria-expanded", String(link.dataset.n === String(n)));
    }
    for (const item of this.sources.children) {
      item.classList.toggle("shown", item.dataset.n === String(n));
    }
    if (n === null) {
      this.opener.clear();
      return;
    }
    replace(this.panelTitle, h("span", { class: "cite-number" }, `[${n}]`), " ", source.label);
    const citation = source.citation ?? {};
    // a text citation opens at its anchor (the inner heading it is cited under); a page's
    // citation at its page (of a snippet that runs onto two, the one its sentence is on)
    const anchor = citation.page_start == null ? (citation.anchor ?? null) : null;
    this.opener.show("", source.chunk_id, citation.page_start ?? null, anchor);
  }

  /** The panel as the frame its document scrolls in: its own scroll beside the answer,
   * the window's below it; what shows of it is under its (sticky) head. */
  panelFrame() {
    return {
      area: () => {
        const box = this.panel.getBoundingClientRect();
        const head = this.panelHead.getBoundingClientRect();
        return {
          top: Math.max(box.top, head.bottom, 0),
          bottom: Math.min(box.bottom, window.innerHeight),
        };
      },
      scrollBy: (top) => {
        const own = getComputedStyle(this.panel).overflowY !== "visible";
        (own ? this.panel : window).scrollBy({ top, behavior: "instant" });
      },
    };
  }

  renderSources(sources) {
    this.numbered = new Map(sources.map((source) => [source.n, source]));
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
          { value: String(source.n), dataset: { n: String(source.n) } },
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
    if (this.wanted !== null) {
      const wanted = this.wanted;
      this.wanted = null;
      this.showSource(wanted);
    }
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
