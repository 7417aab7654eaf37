// The Ask webview's page, built as a string with every piece of text escaped: answers and
// labels come from documents, so none of it is ever HTML. The page runs one inline script,
// allowed by its nonce (Content-Security-Policy: nothing else loads or runs).

import { type Answer, type AnswerCitation } from "./api";

export type AskView =
  | { state: "asking"; question: string }
  | { state: "streaming"; question: string; sources: AnswerCitation[]; sentences: string[] }
  | { state: "answered"; answer: Answer }
  | { state: "failed"; question: string; message: string };

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** The answer's text with each `[n]` that names a citation made a link to it. */
export function answerHtml(answer: Pick<Answer, "answer" | "citations">): string {
  const known = new Set(answer.citations.map((c) => c.n));
  return answer.answer
    .split(/(\[\d+\])/)
    .map((part) => {
      const m = /^\[(\d+)\]$/.exec(part);
      if (m && known.has(Number(m[1]))) {
        return `<a href="#" class="cite" data-n="${m[1]}">[${m[1]}]</a>`;
      }
      return escapeHtml(part);
    })
    .join("")
    .replace(/\n/g, "<br>");
}

function sourcesHtml(citations: readonly AnswerCitation[]): string {
  if (citations.length === 0) return `<p class="muted">No sources were cited.</p>`;
  const items = citations
    .map((c) => `<li value="${c.n}"><a href="#" class="cite" data-n="${c.n}">${escapeHtml(c.label)}</a></li>`)
    .join("");
  return `<h2>Sources</h2><ol class="sources">${items}</ol>`;
}

export function askPage(view: AskView, nonce: string): string {
  let body: string;
  if (view.state === "asking") {
    body = `<h1>${escapeHtml(view.question)}</h1><p class="muted" role="status">Asking docshelf…</p>`;
  } else if (view.state === "failed") {
    body = `<h1>${escapeHtml(view.question)}</h1><p class="error" role="alert">${escapeHtml(view.message)}</p>`;
  } else if (view.state === "streaming") {
    const text = answerHtml({ answer: view.sentences.join(" "), citations: view.sources });
    body =
      `<h1>${escapeHtml(view.question)}</h1>` +
      `<p class="answer" aria-busy="true">${text}</p>` +
      `<p class="muted" role="status">Writing…</p>` +
      sourcesHtml(view.sources);
  } else {
    const { answer } = view;
    const notice = answer.notice ? `<p class="muted">${escapeHtml(answer.notice)}</p>` : "";
    const how =
      answer.mode === "llm"
        ? "Written by the LLM from the sources"
        : "Extractive: sentences taken from the sources";
    body =
      `<h1>${escapeHtml(answer.question)}</h1>` +
      `<p class="answer">${answerHtml(answer)}</p>` +
      `<p class="muted">${how}</p>` +
      notice +
      sourcesHtml(answer.citations);
  }
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>docshelf: Ask</title>
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); line-height: 1.5; padding: 0 1rem; }
h1 { font-size: 1.2rem; }
h2 { font-size: 1rem; }
.muted { color: var(--vscode-descriptionForeground); }
.error { color: var(--vscode-errorForeground); }
a { color: var(--vscode-textLink-foreground); }
</style>
</head>
<body>
${body}
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  vscode.postMessage({ type: "open", n: Number(link.dataset.n) });
});
</script>
</body>
</html>
`;
}
