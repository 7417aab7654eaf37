// "docshelf: Ask": a question in, a cited answer in a webview; a citation opens its place.

import { randomBytes } from "node:crypto";

import * as vscode from "vscode";

import { type Answer, type AnswerCitation, type DocshelfClient } from "./api";
import { askPage } from "./ask-html";
import { explain } from "./messages";
import { openCitation } from "./open";
import { askStream } from "./sse";
import { type Session } from "./session";

export class AskPanel {
  private panel: vscode.WebviewPanel | undefined;
  private answer: Answer | undefined;
  private client: DocshelfClient | undefined;

  constructor(private readonly session: Session) {}

  async ask(question?: string): Promise<void> {
    let client: DocshelfClient;
    try {
      client = await this.session.client();
    } catch (error) {
      await this.session.report(error);
      return;
    }
    const editor = vscode.window.activeTextEditor;
    const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : "";
    const text =
      question ??
      (await vscode.window.showInputBox({
        title: "docshelf: Ask",
        prompt: "A question; the answer cites the documents it comes from",
        value: selected.trim().slice(0, 500),
        validateInput: (value) => (value.trim() ? undefined : "Type a question"),
      }));
    if (!text?.trim()) return;
    this.client = client;
    const panel = this.show();
    const nonce = randomBytes(16).toString("base64");
    panel.webview.html = askPage({ state: "asking", question: text }, nonce);
    // Sentences arrive as the server verifies them; citations work as soon as the sources do.
    const streaming = {
      state: "streaming" as const,
      question: text,
      sources: [] as AnswerCitation[],
      sentences: [] as string[],
    };
    this.answer = { question: text, answer: "", mode: "", citations: [] };
    try {
      this.answer = await askStream(client, text.trim(), {
        onSources: (sources) => {
          streaming.sources = sources;
          this.answer = { question: text, answer: "", mode: "", citations: sources };
          panel.webview.html = askPage(streaming, nonce);
        },
        onText: (sentence) => {
          streaming.sentences.push(sentence);
          panel.webview.html = askPage(streaming, nonce);
        },
      });
      panel.webview.html = askPage({ state: "answered", answer: this.answer }, nonce);
    } catch (error) {
      this.answer = undefined;
      panel.webview.html = askPage(
        { state: "failed", question: text, message: explain(error, client.baseUrl).text },
        nonce,
      );
    }
  }

  private show(): vscode.WebviewPanel {
    if (this.panel) {
      this.panel.reveal(vscode.ViewColumn.Beside);
      return this.panel;
    }
    const panel = vscode.window.createWebviewPanel(
      "docshelf.ask",
      "docshelf: Ask",
      vscode.ViewColumn.Beside,
      {
        enableScripts: true,
        localResourceRoots: [],
      },
    );
    panel.webview.onDidReceiveMessage((message: unknown) => this.onMessage(message));
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
    this.panel = panel;
    return panel;
  }

  /** A click on citation `n`: open the chunk's place (workspace file or web page). */
  async onMessage(message: unknown): Promise<void> {
    const n = (message as { type?: unknown; n?: unknown } | null)?.n;
    if ((message as { type?: unknown }).type !== "open" || typeof n !== "number") return;
    const cited = this.answer?.citations.find((c) => c.n === n);
    const client = this.client;
    if (!cited || !client) return;
    try {
      const context = await client.context(cited.chunk_id);
      // No document id: the web page finds the chunk's document itself (`#cite/<chunk id>`).
      await openCitation(client, "", cited.chunk_id, context.citation, context.text);
    } catch (error) {
      await this.session.report(error);
    }
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
