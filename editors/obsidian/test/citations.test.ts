// @vitest-environment happy-dom
// An answer's [n] made links to its sources; nothing from a document ever becomes HTML.

import { describe, expect, it } from "vitest";

import { type AnswerCitation } from "../src/api";
import { CITE_CLASS, answerParts, renderAnswer, renderSources } from "../src/citations";

const source = (n: number): AnswerCitation => ({
  n,
  chunk_id: `chunk_${n}`,
  label: `Note ${n} (notes/${n}.md#0)`,
  citation: {
    label: `Note ${n}`,
    path: `/v/notes/${n}.md`,
    title: `Note ${n}`,
    heading_path: ["Top", `Part ${n}`],
    chunk_index: 0,
    page_start: null,
    page_end: null,
  },
});

describe("answerParts", () => {
  it("cuts the text at the citations of known sources", () => {
    expect(answerParts("A [1]. B [1, 2].", new Set([1, 2]))).toEqual([
      { text: "A " },
      { cite: [1] },
      { text: ". B " },
      { cite: [1, 2] },
      { text: "." },
    ]);
  });

  it("leaves a document's own reference markers as text", () => {
    expect(answerParts("As shown [4] and [1, 4].", new Set([1]))).toEqual([
      { text: "As shown [4] and [1, 4]." },
    ]);
    expect(answerParts("", new Set([1]))).toEqual([]);
  });
});

describe("renderAnswer", () => {
  it("makes each known citation a link that opens its source", () => {
    const el = document.createElement("div");
    const opened: number[] = [];
    renderAnswer(
      el,
      "Raft elects a leader [1]. Logs replicate [1, 2]. See [9].",
      [source(1), source(2)],
      (s) => opened.push(s.n),
    );
    expect(el.textContent).toBe("Raft elects a leader [1]. Logs replicate [1, 2]. See [9].");
    const links = [...el.querySelectorAll<HTMLAnchorElement>(`a.${CITE_CLASS}`)];
    expect(links.map((a) => a.dataset.n)).toEqual(["1", "1", "2"]);
    expect(links[0].title).toBe("Note 1 (notes/1.md#0)");
    links[2].click();
    links[0].click();
    expect(opened).toEqual([2, 1]);
  });

  it("keeps markup in the answer as text", () => {
    const el = document.createElement("div");
    renderAnswer(el, '<img src=x onerror="alert(1)"> [1]', [source(1)], () => undefined);
    expect(el.querySelector("img")).toBeNull();
    expect(el.textContent).toContain("<img src=x");
  });
});

describe("renderSources", () => {
  it("lists the sources, numbered, each a link with its heading path", () => {
    const el = document.createElement("div");
    const opened: number[] = [];
    renderSources(el, [source(1), source(3)], (s) => opened.push(s.n));
    const items = [...el.querySelectorAll("li")];
    expect(items.map((li) => li.value)).toEqual([1, 3]);
    expect(items[1].textContent).toBe("Note 3 (notes/3.md#0) — Top › Part 3");
    items[1].querySelector("a")?.click();
    expect(opened).toEqual([3]);
  });
});
