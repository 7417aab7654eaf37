// The event-stream parser, however the bytes are cut, and the streamed answer.

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { DocshelfClient } from "../src/api";
import { SseParser, askStream, readEventStream } from "../src/sse";
import { fakeFetch, streamed } from "./responses";

const STREAM =
  ': keep-alive\n\nid: 1\nevent: stage\ndata: {"a":1}\n\r\nevent: text\ndata: line one\ndata: line two\r\n\r\ndata:no space\n\nevent: ignored\n\n';

describe("SseParser", () => {
  it("reads events, ids, multi-line data; skips comments and empty events", () => {
    const messages = new SseParser().push(STREAM);
    expect(messages).toEqual([
      { id: "1", event: "stage", data: '{"a":1}' },
      { id: "1", event: "text", data: "line one\nline two" },
      { id: "1", event: "message", data: "no space" },
    ]);
  });

  it("gives the same messages however the stream is cut", () => {
    const whole = new SseParser().push(STREAM);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: STREAM.length }), { maxLength: 8 }), (cuts) => {
        const at = [...new Set(cuts)].sort((a, b) => a - b);
        const parser = new SseParser();
        const got = [];
        let last = 0;
        for (const cut of [...at, STREAM.length]) {
          got.push(...parser.push(STREAM.slice(last, cut)));
          last = cut;
        }
        expect(got).toEqual(whole);
      }),
    );
  });

  it("decodes a character cut between two chunks", async () => {
    const bytes = new TextEncoder().encode("data: é\n\n");
    async function* body() {
      await Promise.resolve();
      yield bytes.slice(0, 7);
      yield bytes.slice(7);
    }
    const got = [];
    for await (const m of readEventStream(body())) got.push(m.data);
    expect(got).toEqual(["é"]);
  });
});

describe("askStream", () => {
  const sources = [{ n: 1, chunk_id: "c1", label: "Raft (raft.md#0)" }];
  const done = { question: "q", answer: "It elects [1].", mode: "extractive", citations: sources };

  it("gives the sources, each sentence, then the whole answer", async () => {
    const { fetch, sent } = fakeFetch(() =>
      streamed(200, [
        `event: sources\ndata: ${JSON.stringify({ sources })}\n\n`,
        `event: text\ndata: {"text": "It elects [1]."}\n\nevent: done\n`,
        `data: ${JSON.stringify(done)}\n\n`,
      ]),
    );
    const client = new DocshelfClient({ baseUrl: "http://h:1", token: "t", fetch });
    const seen: string[] = [];
    const answer = await askStream(client, "q", {
      onSources: (s) => seen.push(`sources ${s.length}`),
      onText: (t) => seen.push(t),
    });
    expect(seen).toEqual(["sources 1", "It elects [1]."]);
    expect(answer).toEqual(done);
    expect(sent[0].headers?.Accept).toBe("text/event-stream");
  });

  it("says so when the stream ends before the answer is done", async () => {
    const { fetch } = fakeFetch(() =>
      streamed(200, [`event: sources\ndata: ${JSON.stringify({ sources })}\n\n`]),
    );
    const client = new DocshelfClient({ baseUrl: "http://h:1", token: "t", fetch });
    await expect(askStream(client, "q", { onSources: () => {}, onText: () => {} })).rejects.toThrow(
      /ask again/,
    );
  });
});
