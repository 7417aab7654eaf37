// An answer's text with its `[n]` citations made links. Answers come from documents, so none
// of their text is ever HTML: every piece becomes a text node. A number that names no source
// of the answer (a document's own reference marker, `[4]`) stays plain text.

import { type AnswerCitation } from "./api";

export type Part = { text: string } | { cite: number[] };

const CITES = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

/** The answer cut into text and citation groups (`[1]`, `[1, 3]`) of known sources. */
export function answerParts(answer: string, known: ReadonlySet<number>): Part[] {
  const parts: Part[] = [];
  let last = 0;
  const text = (s: string): void => {
    if (!s) return;
    const previous = parts[parts.length - 1];
    if (previous && "text" in previous) previous.text += s;
    else parts.push({ text: s });
  };
  for (const m of answer.matchAll(CITES)) {
    const numbers = m[1].split(",").map((n) => Number(n.trim()));
    text(answer.slice(last, m.index));
    if (numbers.every((n) => known.has(n))) parts.push({ cite: numbers });
    else text(m[0]);
    last = m.index + m[0].length;
  }
  text(answer.slice(last));
  return parts;
}

export const CITE_CLASS = "docshelf-cite";

/**
 * Appends the answer to `el`: text as text, each known citation a link (`data-n`, the
 * source's label as its title) that calls `onCite` with its source.
 */
export function renderAnswer(
  el: HTMLElement,
  answer: string,
  sources: readonly AnswerCitation[],
  onCite: (source: AnswerCitation) => void,
): void {
  const byNumber = new Map(sources.map((s) => [s.n, s]));
  const doc = el.ownerDocument;
  for (const part of answerParts(answer, new Set(byNumber.keys()))) {
    if ("text" in part) {
      el.appendChild(doc.createTextNode(part.text));
      continue;
    }
    el.appendChild(doc.createTextNode("["));
    part.cite.forEach((n, i) => {
      if (i > 0) el.appendChild(doc.createTextNode(", "));
      el.appendChild(citeLink(doc, byNumber.get(n) as AnswerCitation, String(n), onCite));
    });
    el.appendChild(doc.createTextNode("]"));
  }
}

function citeLink(
  doc: Document,
  source: AnswerCitation,
  text: string,
  onCite: (source: AnswerCitation) => void,
): HTMLAnchorElement {
  const link = doc.createElement("a");
  link.className = CITE_CLASS;
  link.href = "#";
  link.textContent = text;
  link.title = source.label;
  link.dataset.n = String(source.n);
  link.addEventListener("click", (event) => {
    event.preventDefault();
    onCite(source);
  });
  return link;
}

/** The numbered sources under an answer, each a link to its place. */
export function renderSources(
  el: HTMLElement,
  sources: readonly AnswerCitation[],
  onCite: (source: AnswerCitation) => void,
): void {
  const doc = el.ownerDocument;
  const list = doc.createElement("ol");
  list.className = "docshelf-sources";
  for (const source of sources) {
    const item = doc.createElement("li");
    item.value = source.n;
    item.appendChild(citeLink(doc, source, source.label, onCite));
    const trail = source.citation?.heading_path.join(" › ");
    if (trail) {
      const where = doc.createElement("span");
      where.className = "docshelf-trail";
      where.textContent = ` — ${trail}`;
      item.appendChild(where);
    }
    list.appendChild(item);
  }
  el.appendChild(list);
}
