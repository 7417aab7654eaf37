// A citation's heading path to the line of the note that holds it.

import { describe, expect, it } from "vitest";

import { citedLine, markdownHeadings, normalizeHeading, snippetLine } from "../src/headings";

const NOTE = [
  "---", // 0
  "title: Raft",
  "# not a heading: frontmatter",
  "---",
  "# Raft", // 4
  "",
  "## Elections", // 6
  "A follower that hears no heartbeat becomes a candidate.",
  "```",
  "## Elections (in a fence)",
  "```",
  "## Log replication", // 11
  "### Elections", // 12: same name, deeper
  "Setext title", // 13
  "------------",
  "## **Bold** [[Wiki|link]] `code`", // 15
].join("\n");

describe("citedLine", () => {
  it("finds the heading whose whole path matches", () => {
    expect(citedLine(NOTE, ["Raft", "Elections"])).toBe(6);
    expect(citedLine(NOTE, ["Raft", "Log replication", "Elections"])).toBe(12);
  });

  it("skips frontmatter and fenced code", () => {
    const lines = markdownHeadings(NOTE.split("\n")).map((h) => h.line);
    expect(lines).not.toContain(2);
    expect(lines).not.toContain(9);
  });

  it("reads setext headings and compares headings without their markup", () => {
    expect(citedLine(NOTE, ["Raft", "Setext title"])).toBe(13);
    expect(citedLine(NOTE, ["Raft", "Bold link code"])).toBe(15);
  });

  it("falls back to the best tail match, then to the snippet, then to the top", () => {
    expect(citedLine(NOTE, ["Renamed", "Elections"])).toBe(6);
    expect(citedLine(NOTE, ["Gone"], "A follower that hears no heartbeat")).toBe(7);
    expect(citedLine(NOTE, [], "nowhere in the note")).toBe(0);
  });

  it("normalizes as docshelf stores headings", () => {
    expect(normalizeHeading("  **Raft**  &amp; [Paxos](x.md) ==hi== ")).toBe("raft & paxos hi");
    expect(snippetLine("a\r\nb\r\nc", "c")).toBe(2);
  });
});
