// The upload state machine: transitions and the words shown for each state.

import { describe, expect, it } from "vitest";

import {
  DEDUP_MESSAGE,
  type UploadState,
  advance,
  describe as describeState,
  initialState,
} from "../src/upload";

const receipt = (status: string) => ({ document_id: "doc_1", status, fingerprint: "f" });
const stage = (id: string, name: string, progressPct: number | null = null, message = "") => ({
  kind: "stage" as const,
  event: { id, stage: name, progressPct, message },
});

describe("advance", () => {
  it("goes uploading -> processing (each stage) -> complete", () => {
    let s: UploadState = initialState("a.md");
    s = advance(s, { kind: "sent", receipt: receipt("queued") });
    expect(s).toMatchObject({ phase: "processing", stage: "queued", documentId: "doc_1" });
    s = advance(s, stage("5", "embedding", 67, "embedded 32/48 snippets"));
    expect(describeState(s)).toBe("a.md: Embedding 67% — embedded 32/48 snippets");
    expect(s).toMatchObject({ lastEventId: "5" });
    s = advance(s, stage("6", "complete", 100));
    expect(s).toEqual({ phase: "complete", name: "a.md", documentId: "doc_1", deduplicated: false });
  });

  it("takes the dedup fast path when the bytes were already processed", () => {
    const s = advance(initialState("a.md"), { kind: "sent", receipt: receipt("complete") });
    expect(s).toMatchObject({ phase: "complete", deduplicated: true });
    expect(describeState(s)).toBe(`a.md: ${DEDUP_MESSAGE}`);
  });

  it("follows bytes already uploaded but not yet processed", () => {
    const s = advance(initialState("a.md"), { kind: "sent", receipt: receipt("parsing") });
    expect(s).toMatchObject({ phase: "processing", stage: "parsing" });
  });

  it("fails with the reason and the stage it stopped at; retry resumes after the last event", () => {
    let s = advance(initialState("b.md"), { kind: "sent", receipt: receipt("queued") });
    s = advance(s, stage("2", "parsing"));
    s = advance(s, stage("3", "failed", null, "invalid UTF-8 at byte 33"));
    expect(s).toMatchObject({
      phase: "failed",
      stage: "parsing",
      reason: "invalid UTF-8 at byte 33",
      lastEventId: "3",
    });
    expect(describeState(s)).toBe("b.md: Failed while parsing — invalid UTF-8 at byte 33");
    s = advance(s, { kind: "retrying" });
    expect(s).toMatchObject({ phase: "processing", stage: "queued", lastEventId: "3" });
  });

  it("a refused upload has no document: retry sends the bytes again", () => {
    let s = advance(initialState("c.png"), { kind: "error", reason: "unsupported type" });
    expect(s).toMatchObject({ phase: "failed", documentId: undefined });
    expect(describeState(s)).toBe("c.png: Failed — unsupported type");
    s = advance(s, { kind: "retrying" });
    expect(s).toEqual({ phase: "uploading", name: "c.png" });
  });

  it("refuses events that do not fit the phase", () => {
    expect(() => advance(initialState("a"), stage("1", "parsing"))).toThrow(
      /no "stage" in phase "uploading"/,
    );
    const done = advance(initialState("a"), { kind: "sent", receipt: receipt("complete") });
    expect(() => advance(done, { kind: "retrying" })).toThrow(/phase "complete"/);
    expect(() => advance(done, { kind: "error", reason: "x" })).toThrow();
  });
});
