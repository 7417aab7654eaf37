// The upload view: drag and drop (or choose) files; each gets a row with a progress bar
// that follows the server's stages live (SSE), and a retry button when it fails.

import { retryable } from "./api.js";
import { formatBytes, h, replace } from "./dom.js";

const STAGES = ["uploading", "queued", "parsing", "chunking", "embedding", "indexing", "complete"];
const TERMINAL = new Set(["complete", "failed"]);
const PARALLEL = 3; // uploads in flight at once
const UPLOAD_SHARE = 10; // the byte transfer fills the first 10% of the bar

export class UploadView {
  constructor(api, { onDone = () => {} } = {}) {
    this.api = api;
    this.onDone = onDone;
    this.list = document.getElementById("uploads");
    this.zone = document.getElementById("dropzone");
    this.input = document.getElementById("file-input");
    this.queue = [];
    this.active = 0;
    this.count = 0;
    this.input.addEventListener("change", () => {
      this.add([...this.input.files]);
      this.input.value = "";
    });
    for (const type of ["dragenter", "dragover"]) {
      this.zone.addEventListener(type, (event) => {
        event.preventDefault();
        this.zone.classList.add("dragging");
      });
    }
    for (const type of ["dragleave", "drop"]) {
      this.zone.addEventListener(type, () => this.zone.classList.remove("dragging"));
    }
    this.zone.addEventListener("drop", (event) => {
      event.preventDefault();
      this.add([...(event.dataTransfer?.files ?? [])]);
    });
    // A file dropped beside the zone must not make the browser navigate away to it.
    window.addEventListener("dragover", (event) => event.preventDefault());
    window.addEventListener("drop", (event) => event.preventDefault());
  }

  add(files) {
    for (const file of files) {
      const row = new UploadRow(file, ++this.count, this.api, this.onDone);
      this.list.prepend(row.el);
      this.queue.push(row);
    }
    this.pump();
  }

  pump() {
    while (this.active < PARALLEL && this.queue.length) {
      const row = this.queue.shift();
      this.active += 1;
      row.start().finally(() => {
        this.active -= 1;
        this.pump();
      });
    }
  }
}

class UploadRow {
  constructor(file, n, api, onDone) {
    this.file = file;
    this.api = api;
    this.onDone = onDone;
    this.documentId = null;
    this.lastEventId = null;
    this.stage = "uploading";
    const id = `upload-${n}`;
    this.bar = h("progress", { max: "100", value: "0", "aria-labelledby": `${id}-name` });
    this.stageLabel = h("span", { class: "stage-name" }, "uploading");
    this.message = h("span", { class: "stage-message" });
    this.steps = h(
      "ol",
      { class: "stepper", "aria-hidden": "true" },
      STAGES.map((stage) => h("li", { dataset: { stage } }, stage)),
    );
    this.actions = h("div", { class: "row-actions" });
    this.el = h(
      "li",
      { class: "upload", id, dataset: { stage: "uploading" } },
      h(
        "div",
        { class: "upload-head" },
        h("span", { class: "file-name", id: `${id}-name` }, file.name),
        h("span", { class: "file-size" }, formatBytes(file.size)),
      ),
      this.steps,
      this.bar,
      h(
        "p",
        { class: "upload-status", role: "status", "aria-live": "polite" },
        this.stageLabel,
        " ",
        this.message,
      ),
      this.actions,
    );
  }

  show(stage, pct, message = "") {
    this.stage = stage;
    this.el.dataset.stage = stage;
    if (pct !== null && pct !== undefined) this.bar.value = Math.max(0, Math.min(100, pct));
    replace(this.stageLabel, stage);
    replace(this.message, message === stage ? "" : message);
    const reached = STAGES.indexOf(stage);
    if (reached < 0) return; // failed: the stepper keeps showing where it stopped
    for (const step of this.steps.children) {
      const i = STAGES.indexOf(step.dataset.stage);
      step.className = i < reached || stage === "complete" ? "done" : i === reached ? "now" : "";
    }
  }

  /** Send the file, then follow its stages. A failure to reach the server (or one it
   * could not answer) keeps a Retry: that sends the file again, or, once the server has
   * it, follows its stages again. A refusal (too large, a type no parser reads) has
   * none: the same file would be refused the same way. */
  async start() {
    try {
      if (!this.documentId) {
        const result = await this.api.upload(this.file, (fraction) =>
          this.show("uploading", fraction * UPLOAD_SHARE, `${Math.round(fraction * 100)}% sent`),
        );
        this.documentId = result.document_id;
        if (result.already_in_library) {
          await this.already();
          return;
        }
        this.show("queued", UPLOAD_SHARE, result.status === "queued" ? "" : "already uploaded");
      }
      await this.follow();
    } catch (error) {
      this.unreached(error);
    }
  }

  /** The same bytes were in the library already: nothing new happens, say so (and how
   * that document stands). */
  async already() {
    const doc = await this.api.document(this.documentId);
    const title = doc.title || this.file.name;
    if (doc.status === "failed") {
      this.failed(doc, `Already in your library as “${title}”, which failed: `);
      return;
    }
    if (doc.status !== "complete") {
      this.show(doc.status, null, `already in your library as “${title}”, still being processed`);
      await this.follow();
      return;
    }
    this.show("complete", 100);
    this.el.dataset.already = "true";
    replace(this.stageLabel, "Already in your library");
    replace(this.message, `as “${title}”: nothing new to add.`);
    this.links();
  }

  /** Follow the document's stage events until complete or failed. */
  async follow() {
    const path = `/v1/documents/${encodeURIComponent(this.documentId)}/events`;
    for (let round = 0; round < 5 && !TERMINAL.has(this.stage); round += 1) {
      this.lastEventId = await this.api.stream(path, {
        lastEventId: this.lastEventId,
        onEvent: ({ data }) => this.onStage(data),
      });
      if (!TERMINAL.has(this.stage)) await this.settleFromRecord();
    }
    if (this.stage === "complete") this.complete();
    if (this.stage === "failed") await this.settleFailure();
  }

  onStage(data) {
    const pct = UPLOAD_SHARE + ((data.progress_pct ?? 0) * (100 - UPLOAD_SHARE)) / 100;
    if (data.stage === "failed") {
      this.show("failed", 100, data.message); // whether a retry can help: settleFailure()
      replace(this.actions);
      return;
    }
    this.show(data.stage, data.stage === "complete" ? 100 : pct, data.message);
  }

  /** The stream ended without a final stage (e.g. the same bytes were already there):
   * read the document's state instead. */
  async settleFromRecord() {
    const doc = await this.api.document(this.documentId);
    if (doc.status === "complete") this.show("complete", 100, "");
    else if (doc.status === "failed") this.show("failed", 100, doc.job?.last_error ?? "failed");
  }

  /** A failed job: its reason, and a Retry only where the job record says a retry can
   * help (a time limit, the store unavailable), never for what the bytes decide. */
  async settleFailure() {
    let doc;
    try {
      doc = await this.api.document(this.documentId);
    } catch (error) {
      this.unreached(error);
      return;
    }
    this.failed(doc);
    this.onDone(this.documentId);
  }

  failed(doc, lead = "") {
    const job = doc.job ?? {};
    this.show("failed", 100, `${lead}${job.last_error ?? "failed"}`);
    replace(
      this.actions,
      job.retryable
        ? h(
            "button",
            { type: "button", class: "retry", "aria-describedby": this.el.id + "-name", onclick: () => this.retry() },
            "Retry",
          )
        : h("span", { class: "muted" }, "Not retried: the same bytes would fail the same way."),
    );
  }

  /** The server could not be reached, or refused the request: a Retry where trying
   * again may help (no answer, or the server unavailable). */
  unreached(error) {
    this.show("failed", null, error.message);
    replace(
      this.actions,
      retryable(error)
        ? h(
            "button",
            {
              type: "button",
              class: "retry",
              "aria-describedby": this.el.id + "-name",
              onclick: () => {
                replace(this.actions);
                this.show(this.documentId ? "queued" : "uploading", null, "trying again");
                this.start();
              },
            },
            "Retry",
          )
        : null,
    );
  }

  complete() {
    this.links();
    this.onDone(this.documentId);
  }

  links() {
    replace(
      this.actions,
      h(
        "a",
        { href: `#library/${encodeURIComponent(this.documentId)}`, class: "button quiet" },
        "Open in library",
      ),
    );
  }

  async retry() {
    replace(this.actions);
    try {
      await this.api.retry(this.documentId);
    } catch (error) {
      if (error.status === 409) {
        // failed for good after all (or no longer failed): the record says which
        await this.settleFailure();
        return;
      }
      this.unreached(error);
      return;
    }
    this.show("queued", UPLOAD_SHARE, "retry requested");
    try {
      await this.follow();
    } catch (error) {
      this.unreached(error);
    }
  }
}
