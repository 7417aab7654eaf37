// "Index this vault": the progress lines read, the report in words, and the command run
// (against a stand-in executable; the live tests run the real one).

import { afterAll, describe, expect, it } from "vitest";

import { isAbort } from "../src/api";
import {
  type ProgressEvent,
  describeProgress,
  describeReport,
  parseProgressLine,
  runIndex,
} from "../src/indexer";
import { fakeDocshelf } from "./fake-docshelf";

describe("progress and report", () => {
  it("reads docshelf's progress lines and nothing else", () => {
    const line =
      '{"event": "progress", "phase": "parse", "done": 1, "total": 3, "unit": "files", "item": "raft.md", "eta_seconds": 120}';
    expect(parseProgressLine(line)).toEqual({
      phase: "parse",
      done: 1,
      total: 3,
      unit: "files",
      item: "raft.md",
      eta_seconds: 120,
    });
    expect(parseProgressLine('{"event": "other"}')).toBeUndefined();
    expect(parseProgressLine("{not json")).toBeUndefined();
    expect(parseProgressLine("Traceback")).toBeUndefined();
  });

  it("says a step in words", () => {
    const e = (o: Partial<ProgressEvent>): ProgressEvent => ({
      phase: "parse",
      done: 1,
      total: 3,
      unit: "files",
      item: "",
      ...o,
    });
    expect(describeProgress(e({ item: "raft.md", eta_seconds: 30 }))).toBe(
      "Reading 1/3 files · raft.md · about 30 s left",
    );
    expect(describeProgress(e({ phase: "scan", total: null, done: 40, item: "done" }))).toBe(
      "Scanning 40 files",
    );
    expect(describeProgress(e({ phase: "embed", eta_seconds: 600 }))).toBe(
      "Embedding 1/3 files · about 10 min left",
    );
  });

  it("sums up a run, its failures by name", () => {
    const counts = { added: 2, updated: 1, unchanged: 40, moved: 0, removed: 0, failed: 0 };
    expect(describeReport({ source_id: "s", counts, failures: [] })).toBe(
      "Indexed the vault: 2 added, 1 updated, 40 unchanged",
    );
    const failures = [1, 2, 3, 4].map((n) => ({ path: `/v/f${n}.md`, reason: "empty" }));
    expect(describeReport({ source_id: "s", counts: { unchanged: 0 }, failures })).toBe(
      "Indexed the vault: nothing to index (f1.md: empty; f2.md: empty; f3.md: empty; 1 more)",
    );
  });
});

describe("runIndex", () => {
  const fake = fakeDocshelf();
  afterAll(() => fake.remove());
  const base = { executable: fake.executable, home: "", vaultPath: "/v" };

  it("runs `docshelf add VAULT --json --progress` in the home given, passing on its progress", async () => {
    const seen: string[] = [];
    const report = await runIndex({
      ...base,
      home: " /srv/library ",
      env: fake.env("ok"),
      onProgress: (event) => seen.push(describeProgress(event)),
    });
    expect(fake.lastCall()).toEqual({ argv: ["add", "/v", "--json", "--progress"], home: "/srv/library" });
    expect(seen).toEqual([
      "Scanning 2/2 files · 2 to index",
      "Reading 1/2 files · raft.md",
      "Reading 2/2 files",
    ]);
    expect(report.counts.added).toBe(1);
    expect(report.failures).toEqual([{ path: "/v/b.txt", reason: "binary content, not text" }]);
  });

  it("leaves DOCSHELF_HOME as it is when no home is set", async () => {
    const env = { ...fake.env("ok"), DOCSHELF_HOME: "/from/the/environment" };
    await runIndex({ ...base, env, onProgress: () => {} });
    expect(fake.lastCall().home).toBe("/from/the/environment");
  });

  it("says docshelf's own error, or what it wrote before it died", async () => {
    await expect(runIndex({ ...base, env: fake.env("fail"), onProgress: () => {} })).rejects.toThrow(
      "docshelf could not index the vault: No such file or folder: /v",
    );
    await expect(runIndex({ ...base, env: fake.env("crash"), onProgress: () => {} })).rejects.toThrow(
      /RuntimeError: the store is locked/,
    );
  });

  it("says where to set the executable when there is none", async () => {
    await expect(
      runIndex({ ...base, executable: "/nowhere/docshelf", env: fake.env("ok"), onProgress: () => {} }),
    ).rejects.toThrow(/No docshelf executable at "\/nowhere\/docshelf": set its full path in Settings/);
  });

  it("stops the command when aborted", async () => {
    const abort = new AbortController();
    const running = runIndex({
      ...base,
      env: fake.env("hang"),
      signal: abort.signal,
      onProgress: () => abort.abort(),
    });
    const error = await running.catch((e: unknown) => e);
    expect(isAbort(error)).toBe(true);
  });
});
