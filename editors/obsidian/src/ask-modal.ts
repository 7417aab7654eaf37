// "docshelf: Ask": the question, then the answer as the server writes it (streamed sentence
// by sentence), its `[n]` citations links that open the cited note at its heading. A click
// closes the modal to show the note; Ask again and the last answer is back.

import { type App, Modal } from "obsidian";

import { type Answer, type AnswerCitation, isAbort } from "./api";
import { renderAnswer, renderSources } from "./citations";
import { type Host } from "./host";
import { abstention, explain } from "./present";
import { askStream } from "./sse";

export class AskModal extends Modal {
  private abort: AbortController | undefined;
  inputEl!: HTMLInputElement;
  statusEl!: HTMLElement;
  answerEl!: HTMLElement;

  constructor(
    app: App,
    private readonly host: Host,
  ) {
    super(app);
  }

  onOpen(): void {
    this.setTitle("docshelf: Ask");
    const { contentEl } = this;
    contentEl.addClass("docshelf-ask");
    const form = contentEl.createEl("form", { cls: "docshelf-ask-form" });
    this.inputEl = form.createEl("input", {
      type: "text",
      placeholder: "Ask your library a question",
      cls: "docshelf-question",
    });
    form.createEl("button", { text: "Ask", type: "submit", cls: "mod-cta" });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.inputEl.value.trim();
      if (question) void this.ask(question);
    });
    this.statusEl = contentEl.createDiv({ cls: "docshelf-status" });
    this.answerEl = contentEl.createDiv({ cls: "docshelf-answer" });
    const last = this.host.lastAsk;
    if (last && last.baseUrl === this.host.settings.serverUrl.trim().replace(/\/+$/, "")) {
      this.inputEl.value = last.question;
      this.show(last.answer);
    }
    this.inputEl.focus();
  }

  /** Asks and shows the answer as it comes; resolves when it is done (or failed). */
  async ask(question: string): Promise<void> {
    this.abort?.abort();
    const abort = new AbortController();
    this.abort = abort;
    this.answerEl.empty();
    this.status("Searching your library…");
    let sources: AnswerCitation[] = [];
    const sentences: string[] = [];
    const text = this.answerEl.createDiv({ cls: "docshelf-answer-text" });
    try {
      const client = this.host.client();
      const answer = await askStream(
        client,
        question,
        {
          onSources: (given) => {
            sources = given;
            this.status(`Answering from ${given.length} source${given.length === 1 ? "" : "s"}…`);
          },
          onText: (sentence) => {
            sentences.push(sentence);
            text.empty();
            renderAnswer(text, sentences.join(" "), sources, (s) => this.cite(s));
          },
        },
        abort.signal,
      );
      if (abort.signal.aborted) return;
      this.host.lastAsk = { baseUrl: client.baseUrl, question, answer };
      this.show(answer);
    } catch (error) {
      if (isAbort(error) || abort.signal.aborted) return;
      this.status(explain(error), "docshelf-error");
    }
  }

  /** The whole answer: whether it answers, the text with its links, the notice, the sources. */
  show(answer: Answer): void {
    this.answerEl.empty();
    const abstained = abstention(answer);
    if (abstained) this.status(abstained, "docshelf-abstain");
    else this.status("");
    const text = this.answerEl.createDiv({ cls: "docshelf-answer-text" });
    renderAnswer(text, answer.answer, answer.citations, (s) => this.cite(s));
    if (answer.notice) this.answerEl.createDiv({ cls: "docshelf-notice", text: answer.notice });
    if (answer.citations.length > 0) {
      this.answerEl.createEl("h4", { text: abstained ? "Closest passages" : "Sources" });
      renderSources(this.answerEl, answer.citations, (s) => this.cite(s));
    }
  }

  private status(text: string, cls?: string): void {
    this.statusEl.empty();
    this.statusEl.className = cls ? `docshelf-status ${cls}` : "docshelf-status";
    this.statusEl.setText(text);
  }

  private cite(source: AnswerCitation): void {
    this.close();
    void this.host.openSource(source);
  }

  onClose(): void {
    this.abort?.abort();
    this.contentEl.empty();
  }
}
