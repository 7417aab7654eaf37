// What the plugin says: hits, errors, abstentions, the settings it keeps.

import { afterEach, describe, expect, it, vi } from "vitest";

import { ApiError, type Hit, Unreachable } from "../src/api";
import { Latest } from "../src/debounce";
import {
  NeedsSetup,
  SNIPPET_CHARS,
  abstention,
  explain,
  hitSnippet,
  hitTitle,
  hitTrail,
} from "../src/present";
import { DEFAULT_SETTINGS, withDefaults } from "../src/settings";

const hit = (
  o: Partial<Hit["citation"]> = {},
  text = "# Raft\n\nA  follower\nbecomes a candidate.",
): Hit => ({
  chunk_id: "c",
  document_id: "d",
  score: 1,
  text,
  citation: {
    label: "Raft (raft.md#0)",
    path: "/v/raft.md",
    title: "Raft",
    heading_path: ["Raft", "Elections"],
    chunk_index: 0,
    page_start: null,
    page_end: null,
    ...o,
  },
});

describe("a hit's lines", () => {
  it("shows title, heading path and pages", () => {
    expect(hitTitle(hit())).toBe("Raft");
    expect(hitTitle(hit({ title: "" }))).toBe("Raft (raft.md#0)");
    expect(hitTrail(hit())).toBe("Raft › Elections");
    expect(hitTrail(hit({ heading_path: [], page_start: 4, page_end: 5 }))).toBe("pp. 4–5");
    expect(hitTrail(hit({ page_start: 4, page_end: 4 }))).toBe("Raft › Elections · p. 4");
  });

  it("shows the snippet as a person reads it, on one line, cut short", () => {
    expect(hitSnippet({ ...hit(), display_text: "Raft\n\nA follower" })).toBe("Raft A follower");
    expect(hitSnippet(hit())).toBe("# Raft A follower becomes a candidate.");
    const long = hitSnippet(hit({}, "word ".repeat(100)));
    expect(long).toHaveLength(SNIPPET_CHARS);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("explain", () => {
  it("tells an unreachable server from a refused token", () => {
    expect(explain(new Unreachable("http://h:1", "connection refused"))).toMatch(
      /^Cannot reach docshelf at http:\/\/h:1: connection refused\. Is `docshelf serve` running\?/,
    );
    expect(explain(new ApiError(401, "unauthorized", "no"))).toMatch(/refused the token/);
    expect(explain(new ApiError(503, "busy", "Too busy"))).toBe("docshelf answered 503: Too busy");
    expect(explain(new NeedsSetup("Set the token"))).toBe("Set the token");
  });
});

describe("abstention", () => {
  it("speaks when the library does not answer", () => {
    expect(abstention({ answered: false, citations: [{ n: 1, chunk_id: "c", label: "l" }] })).toMatch(
      /does not answer/,
    );
    expect(abstention({ citations: [] })).toMatch(/no source is cited/);
    expect(abstention({ answered: true, citations: [{ n: 1, chunk_id: "c", label: "l" }] })).toBeUndefined();
  });
});

describe("withDefaults", () => {
  it("fills what is missing and drops what is wrong", () => {
    expect(withDefaults(null)).toEqual(DEFAULT_SETTINGS);
    expect(
      withDefaults({
        serverUrl: " ",
        token: " dsk_x ",
        searchLimit: 1000,
        vaultOnly: "yes",
        executable: 3,
        other: 1,
      }),
    ).toEqual({ ...DEFAULT_SETTINGS, token: "dsk_x", searchLimit: 100 });
    expect(withDefaults({ searchLimit: "7" }).searchLimit).toBe(7);
    expect(withDefaults({ searchLimit: "x" }).searchLimit).toBe(DEFAULT_SETTINGS.searchLimit);
    expect(withDefaults({ searchLimit: 0 }).searchLimit).toBe(1);
  });
});

describe("Latest", () => {
  afterEach(() => vi.useRealTimers());

  it("asks once the keys stop, and only for the newest query", async () => {
    vi.useFakeTimers();
    const asked: string[] = [];
    const latest = new Latest((q: string) => {
      asked.push(q);
      return Promise.resolve(q.toUpperCase());
    }, 200);
    const a = latest.request("r");
    await vi.advanceTimersByTimeAsync(100);
    const b = latest.request("ra");
    await vi.advanceTimersByTimeAsync(100);
    const c = latest.request("raft");
    expect(await a).toBeUndefined();
    expect(await b).toBeUndefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(await c).toBe("RAFT");
    expect(asked).toEqual(["raft"]);
  });

  it("aborts a request under way when a newer one comes", async () => {
    vi.useFakeTimers();
    const signals: AbortSignal[] = [];
    const latest = new Latest(
      (_q: string, signal: AbortSignal) =>
        new Promise<string>((_resolve, reject) => {
          signals.push(signal);
          signal.addEventListener("abort", () => reject(new Error("aborted")));
        }),
      10,
    );
    const first = latest.request("a");
    await vi.advanceTimersByTimeAsync(10);
    latest.cancel();
    expect(signals[0].aborted).toBe(true);
    expect(await first).toBeUndefined();
  });

  it("passes on the error of the newest request", async () => {
    const latest = new Latest(() => Promise.reject(new Error("down")), 0);
    await expect(latest.request("a")).rejects.toThrow("down");
  });
});
