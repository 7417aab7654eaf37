// Hit -> place: which file (workspace, or the web page) and which line.

import * as path from "node:path";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import type { Citation } from "../src/api";
import { citedLine, markdownHeadings, normalizeHeading, rstHeadings } from "../src/headings";
import { type Workspace, resolveCitation, webUrl, workspaceFile } from "../src/location";

const NOTE = [
  "---", // 0
  "title: Raft # not a heading",
  "---",
  "# Raft", // 3
  "",
  "Intro.",
  "## Setup", // 6
  "",
  "```sh",
  "# Elections (a comment in a fence, not a heading)",
  "```",
  "## Elections", // 11
  "",
  "A follower that hears no heartbeat becomes a candidate.",
  "### Setup", // 14
  "",
  "Timeouts **matter**",
  "----------------", // 17: setext h2 for the line above
  "",
  "## The `log` *and* [commits](https://raft.github.io) ##", // 19
].join("\n");

function cite(p: string, headingPath: string[]): Citation {
  return {
    label: "x",
    path: p,
    title: "t",
    heading_path: headingPath,
    chunk_index: 0,
    page_start: null,
    page_end: null,
  };
}

describe("citedLine (Markdown)", () => {
  it("finds the heading the path names, among headings of the same name", () => {
    expect(citedLine(NOTE, "markdown", ["Raft", "Setup"])).toBe(6);
    expect(citedLine(NOTE, "markdown", ["Raft", "Elections", "Setup"])).toBe(14);
    expect(citedLine(NOTE, "markdown", ["Raft", "Elections"])).toBe(11);
  });

  it("skips frontmatter and fenced code, reads setext headings and strips inline markup", () => {
    expect(markdownHeadings(NOTE.split("\n")).map((h) => h.line)).toEqual([3, 6, 11, 14, 16, 19]);
    expect(citedLine(NOTE, "markdown", ["Raft", "Timeouts matter"])).toBe(16);
    expect(citedLine(NOTE, "markdown", ["Raft", "The log and commits"])).toBe(19);
  });

  it("falls back to the deepest match, then the snippet's line, then the top", () => {
    expect(citedLine(NOTE, "markdown", ["Renamed", "Elections"])).toBe(11);
    expect(citedLine(NOTE, "markdown", ["Gone"], "A follower that hears no heartbeat")).toBe(13);
    expect(citedLine(NOTE, "markdown", ["Gone"], "not in the file")).toBe(0);
    expect(citedLine(NOTE, "markdown", [])).toBe(0);
  });

  it("never points past the end of the file, whatever the path (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string(), { maxLength: 40 }),
        fc.array(fc.string(), { maxLength: 4 }),
        (lines, headingPath) => {
          const line = citedLine(lines.join("\n"), "markdown", headingPath);
          expect(line).toBeGreaterThanOrEqual(0);
          expect(line).toBeLessThan(Math.max(1, lines.length));
        },
      ),
    );
  });

  it("normalizes heading text as docshelf stores it", () => {
    expect(normalizeHeading("  The **Raft**  `log` [[notes/raft#x|Raft]] ")).toBe("the raft log raft");
  });
});

describe("citedLine (reStructuredText, HTML, text)", () => {
  it("reads rst titles, with and without overlines, levels in order of first use", () => {
    const rst = [
      "=====",
      "Guide",
      "=====",
      "",
      "Install",
      "-------",
      "",
      "Usage",
      "-------",
      "",
      "Flags",
      "~~~~~",
    ].join("\n");
    expect(rstHeadings(rst.split("\n")).map((h) => [h.line, h.level, h.text])).toEqual([
      [0, 1, "Guide"],
      [4, 2, "Install"],
      [7, 2, "Usage"],
      [10, 3, "Flags"],
    ]);
    expect(citedLine(rst, "rst", ["Guide", "Usage", "Flags"])).toBe(10);
  });

  it("reads HTML headings across lines", () => {
    const html = "<html><body>\n<h1>Guide</h1>\n<p>x</p>\n<h2 id='u'>\n  Usage &amp; <em>flags</em>\n</h2>";
    expect(citedLine(html, "html", ["Guide", "Usage & flags"])).toBe(3);
  });

  it("finds a plain text file's place by the snippet", () => {
    expect(citedLine("one\ntwo\nthree words here\n", "text", ["Whatever"], "three words")).toBe(2);
  });
});

describe("workspaceFile and resolveCitation", () => {
  const files = new Set([
    "/home/me/notes/raft.md",
    "/home/me/notes/guide/index.md",
    "/work/repo/docs/api.md",
  ]);
  const ws: Workspace = {
    folders: ["/home/me/notes", "/work/repo"],
    exists: (f) => files.has(f),
    pathApi: path.posix,
  };
  const base = "http://127.0.0.1:8750";

  it("opens a path inside the workspace as it is", () => {
    expect(workspaceFile("/home/me/notes/raft.md", ws)).toBe("/home/me/notes/raft.md");
  });

  it("finds a file indexed on another machine by the longest tail of its path", () => {
    expect(workspaceFile("/srv/other/notes/guide/index.md", ws)).toBe("/home/me/notes/guide/index.md");
    expect(workspaceFile("C:\\Users\\x\\repo\\docs\\api.md", ws)).toBe("/work/repo/docs/api.md");
    expect(workspaceFile("/srv/elsewhere/missing.md", ws)).toBeUndefined();
  });

  it("never climbs out of a workspace folder", () => {
    expect(workspaceFile("/x/../../etc/passwd", { ...ws, exists: () => true })).not.toMatch(/\.\./);
  });

  it("sends uploads, PDFs and files not in the workspace to the web page", () => {
    expect(resolveCitation("doc_1", cite("upload://abc", ["A"]), base, ws)).toEqual({
      kind: "web",
      url: "http://127.0.0.1:8750/#library/doc_1",
      why: "upload",
    });
    expect(resolveCitation("doc_2", cite("/home/me/notes/paper.pdf", []), base, ws)).toMatchObject({
      kind: "web",
      why: "binary",
    });
    expect(resolveCitation("doc_3", cite("/nowhere/x.md", []), base, ws)).toMatchObject({
      kind: "web",
      why: "elsewhere",
    });
    expect(resolveCitation("doc_4", cite("/home/me/notes/raft.md", ["Raft"]), base, ws)).toEqual({
      kind: "file",
      path: "/home/me/notes/raft.md",
      fileType: "markdown",
    });
  });

  it("opens a hit on the web page at its chunk: a PDF at its cited page, a text at its anchor", () => {
    const pdf = { ...cite("/home/me/notes/paper.pdf", ["Results"]), page_start: 4, page_end: 5, anchor: 900 };
    // Not `#library/doc_2` (the document record): the page at the cited chunk, lines boxed.
    expect(resolveCitation("doc_2", pdf, base, ws, "chunk_2_7")).toEqual({
      kind: "web",
      url: "http://127.0.0.1:8750/#open/doc_2/chunk_2_7",
      why: "binary",
    });
    const note = { ...cite("/nowhere/x.md", ["A"]), anchor: 120 };
    expect(resolveCitation("doc_3", note, base, ws, "chunk_3_1")).toMatchObject({
      url: "http://127.0.0.1:8750/#open/doc_3/chunk_3_1//120",
    });
    // No document id (an answer's citation): the page finds the chunk's document.
    expect(resolveCitation("", note, base, ws, "chunk_3_1")).toMatchObject({
      url: "http://127.0.0.1:8750/#cite/chunk_3_1",
    });
  });

  it("escapes the document id in the web page's URL", () => {
    expect(webUrl("http://h:1/", "doc/../x")).toBe("http://h:1/#library/doc%2F..%2Fx");
    expect(webUrl("http://h:1/", "d#1", "c?2")).toBe("http://h:1/#open/d%231/c%3F2");
  });
});
