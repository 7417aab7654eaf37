// What the user sees, built from server data that may hold anything: the Ask page (text,
// never HTML) and the search quick pick's rows.

import { describe, expect, it } from "vitest";

import type { Answer, Hit } from "../src/api";
import { answerHtml, askPage, escapeHtml } from "../src/ask-html";
import { hitItem, pageText } from "../src/search-ui";

const hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">';

describe("the Ask page", () => {
  const answer: Answer = {
    question: `Why ${hostile}?`,
    answer: `Because [1] and [7] ${hostile}\nsecond line [2].`,
    mode: "extractive",
    citations: [
      { n: 1, chunk_id: "chunk_a_1", label: `notes/${hostile}.md#1` },
      { n: 2, chunk_id: "chunk_a_2", label: "raft.md#2" },
    ],
    notice: `1 sentence left out ${hostile}`,
  };

  it("shows document text as text: no element or handler from the data survives", () => {
    const html = askPage({ state: "answered", answer }, "N0NCE");
    expect(html).not.toContain("<script>alert");
    expect(html).not.toContain("<img");
    expect(html).toContain(
      "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;",
    );
    // The only script is the page's own, allowed by its nonce.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script nonce="N0NCE">');
    expect(html).toContain("script-src 'nonce-N0NCE'");
  });

  it("links the [n] that name a citation, leaves others as text", () => {
    const body = answerHtml(answer);
    expect(body).toContain('<a href="#" class="cite" data-n="1">[1]</a>');
    expect(body).toContain('<a href="#" class="cite" data-n="2">[2]</a>');
    expect(body).toContain("[7]");
    expect(body).not.toContain('data-n="7"');
    expect(body).toContain("<br>second line");
  });

  it("escapes the question while asking, and the message when it failed", () => {
    expect(askPage({ state: "asking", question: hostile }, "n")).toContain(escapeHtml(hostile));
    const failed = askPage({ state: "failed", question: "q", message: hostile }, "n");
    expect(failed).toContain(`role="alert">${escapeHtml(hostile)}`);
  });
});

describe("search rows", () => {
  const hit = (pageStart: number | null, pageEnd: number | null, text = "A  snippet\nover lines"): Hit => ({
    chunk_id: "chunk_1",
    document_id: "doc_1",
    score: 1,
    text,
    citation: {
      label: "paper.pdf#3",
      path: "/papers/paper.pdf",
      title: "A paper",
      heading_path: ["Results", "Latency"],
      chunk_index: 3,
      page_start: pageStart,
      page_end: pageEnd,
    },
  });

  it("shows title, heading path, page and a one-line snippet", () => {
    expect(hitItem(hit(4, 5))).toMatchObject({
      label: "A paper",
      description: "Results › Latency · pp. 4–5",
      detail: "A snippet over lines",
      alwaysShow: true,
    });
    expect(pageText(hit(4, 4))).toBe("p. 4");
    expect(pageText(hit(null, null))).toBe("");
  });

  it("shows the snippet as text, code as written", () => {
    const text =
      "## Vectors\n\nA `Vec<T>` holds _values_ of one **type** <!-- ignore -->(see " +
      '[Chapter 8][ch08], <span class="f">src/main.rs</span>), and `__init__` stays.';
    expect(hitItem(hit(null, null, text)).detail).toBe(
      "Vectors A Vec<T> holds values of one type (see Chapter 8, src/main.rs), and __init__ stays.",
    );
  });

  it("cuts a long snippet", () => {
    const detail = hitItem(hit(null, null, "word ".repeat(100))).detail ?? "";
    expect(detail.length).toBe(200);
    expect(detail.endsWith("…")).toBe(true);
  });
});
