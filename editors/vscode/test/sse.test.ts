// The SSE parser and the stage follower, against scripted responses (no server).

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { ApiError, DocshelfClient, type Fetch } from "../src/api";
import {
  type SseMessage,
  SseParser,
  StreamGaveUp,
  type StageEvent,
  askStream,
  followDocument,
  stageEvent,
} from "../src/sse";

function parseAll(chunks: string[]): SseMessage[] {
  const parser = new SseParser();
  return chunks.flatMap((c) => parser.push(c));
}

describe("SseParser", () => {
  it("reads id, event and data; comments are skipped", () => {
    const text = ': keep-alive\n\nid: 7\nevent: stage\ndata: {"stage": "parsing"}\n\n';
    expect(parseAll([text])).toEqual([{ id: "7", event: "stage", data: '{"stage": "parsing"}' }]);
  });

  it("joins data lines, keeps the last id for later messages, defaults the event name", () => {
    const text = "id: 3\ndata: a\ndata: b\n\ndata: c\n\n";
    expect(parseAll([text])).toEqual([
      { id: "3", event: "message", data: "a\nb" },
      { id: "3", event: "message", data: "c" },
    ]);
  });

  it("accepts CRLF and CR line ends, even a CRLF split between two chunks", () => {
    expect(parseAll(["id: 1\r\ndata: x\r", "\n\r\n", "data: y\r\r"])).toEqual([
      { id: "1", event: "message", data: "x" },
      { id: "1", event: "message", data: "y" },
    ]);
  });

  it("takes retry, ignores ids with NUL and messages with no data, drops a cut-off message", () => {
    expect(parseAll(["retry: 1500\nid: a\0b\nevent: x\n\nid: 9\ndata: z\n\ndata: cut"])).toEqual([
      { id: "9", event: "message", data: "z" },
    ]);
    const parser = new SseParser();
    expect(parser.push("retry: 1500\ndata: r\n\n")).toEqual([
      { id: undefined, event: "message", data: "r", retry: 1500 },
    ]);
  });

  it("gives the same messages however the stream is split (property)", () => {
    const field = fc.constantFrom(
      "id: 12",
      "event: stage",
      'data: {"stage":"queued"}',
      ": ping",
      "data:",
      "retry: 10",
      "",
    );
    const stream = fc.array(field, { maxLength: 30 }).map((lines) => lines.join("\n") + "\n\n");
    fc.assert(
      fc.property(
        stream,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.constantFrom("\n", "\r\n", "\r"),
        (text, cuts, eol) => {
          const body = text.replace(/\n/g, eol);
          const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
          const pieces: string[] = [];
          let at = 0;
          for (const p of points) {
            pieces.push(body.slice(at, p));
            at = p;
          }
          pieces.push(body.slice(at));
          expect(parseAll(pieces)).toEqual(parseAll([body]));
        },
      ),
    );
  });
});

describe("stageEvent", () => {
  it("reads the data of a stage event", () => {
    const event = stageEvent({
      id: "4",
      event: "stage",
      data: '{"stage": "embedding", "progress_pct": 67, "message": "embedded 32/48"}',
    });
    expect(event).toEqual({ id: "4", stage: "embedding", progressPct: 67, message: "embedded 32/48" });
  });

  it("refuses data that is not JSON or has no stage, saying what came", () => {
    expect(() => stageEvent({ id: "1", event: "stage", data: "<html>" })).toThrow(/not JSON: <html>/);
    expect(() => stageEvent({ id: "1", event: "stage", data: '{"progress_pct": 1}' })).toThrow(
      /without a stage/,
    );
  });
});

// --- the follower, against scripted connections -------------------------------------------

type Connection =
  | { events: [number, string][]; then?: "end" | "drop" }
  | { status: number; code?: string }
  | { refused: true };

function sse(id: number, stage: string): string {
  return `id: ${id}\nevent: stage\ndata: ${JSON.stringify({ stage, progress_pct: null, message: `${stage} message` })}\n\n`;
}

/** A fetch that answers each /events request with the next scripted connection. */
function scripted(connections: Connection[], record: { status: string }) {
  const requests: { lastEventId: string | null }[] = [];
  const fakeFetch: Fetch = (input, init) => {
    const url = input instanceof Request ? input.url : input.toString();
    if (!url.includes("/events")) {
      return Promise.resolve(
        Response.json({ id: "doc_1", status: record.status, job: { last_error: "boom" } }),
      );
    }
    const headers = new Headers(init?.headers);
    requests.push({ lastEventId: headers.get("Last-Event-ID") });
    const next = connections.shift();
    if (!next) throw new Error("no more scripted connections");
    if ("refused" in next)
      return Promise.reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }));
    if ("status" in next) {
      return Promise.resolve(
        Response.json({ error: { code: next.code ?? "x", message: "no" } }, { status: next.status }),
      );
    }
    const encoder = new TextEncoder();
    const chunks = next.events.map(([id, stage]) => encoder.encode(sse(id, stage)));
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // One event per read; a drop errors the read after the last one (as a cut socket).
        const chunk = chunks.shift();
        if (chunk) controller.enqueue(chunk);
        else if (next.then === "drop") controller.error(new TypeError("terminated"));
        else controller.close();
      },
    });
    return Promise.resolve(new Response(body, { headers: { "Content-Type": "text/event-stream" } }));
  };
  return { fakeFetch, requests };
}

function follow(connections: Connection[], record = { status: "parsing" }, lastEventId?: string) {
  const { fakeFetch, requests } = scripted(connections, record);
  const client = new DocshelfClient({ baseUrl: "http://docshelf.test", token: "t", fetch: fakeFetch });
  const events: StageEvent[] = [];
  const sleeps: number[] = [];
  const result = followDocument(client, "doc_1", {
    lastEventId,
    onEvent: (e) => events.push(e),
    maxFailures: 3,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  });
  return { result, events, requests, sleeps };
}

describe("followDocument", () => {
  it("delivers the stages in order and stops at complete", async () => {
    const run = follow([
      {
        events: [
          [1, "queued"],
          [2, "parsing"],
          [3, "chunking"],
          [4, "indexing"],
          [5, "complete"],
          [6, "queued"],
        ],
      },
    ]);
    expect(await run.result).toEqual({ stage: "complete", message: "complete message", lastEventId: "5" });
    expect(run.events.map((e) => e.stage)).toEqual(["queued", "parsing", "chunking", "indexing", "complete"]);
  });

  it("stops at failed with the reason", async () => {
    const run = follow([
      {
        events: [
          [1, "queued"],
          [2, "failed"],
        ],
      },
    ]);
    expect(await run.result).toMatchObject({ stage: "failed", message: "failed message" });
  });

  it("reconnects after a drop with Last-Event-ID, seeing each event once", async () => {
    const run = follow([
      {
        events: [
          [1, "queued"],
          [2, "parsing"],
        ],
        then: "drop",
      },
      { events: [[3, "chunking"]], then: "end" }, // the server cut it short: reopen
      {
        events: [
          [4, "indexing"],
          [5, "complete"],
        ],
      },
    ]);
    expect((await run.result).stage).toBe("complete");
    expect(run.requests.map((r) => r.lastEventId)).toEqual([null, "2", "3"]);
    expect(run.events.map((e) => e.id)).toEqual(["1", "2", "3", "4", "5"]);
    expect(run.sleeps).toEqual([]); // each connection gave something: no waiting
  });

  it("resumes from the given Last-Event-ID, and backs off while the server is down", async () => {
    const run = follow([{ refused: true }, { status: 503 }, { events: [[8, "complete"]] }], undefined, "7");
    expect((await run.result).stage).toBe("complete");
    expect(run.requests.map((r) => r.lastEventId)).toEqual(["7", "7", "7"]);
    expect(run.sleeps).toEqual([250, 500]);
  });

  it("asks the record when a resumed stream has nothing new: done already", async () => {
    const run = follow([{ events: [] }], { status: "failed" }, "9");
    expect(await run.result).toEqual({ stage: "failed", message: "boom", lastEventId: "9" });
  });

  it("gives up after repeated connections that give nothing", async () => {
    const run = follow([{ refused: true }, { refused: true }, { refused: true }, { refused: true }]);
    await expect(run.result).rejects.toThrow(StreamGaveUp);
    await expect(run.result).rejects.toThrow(/3 attempts: connection refused/);
  });

  it("throws a 4xx at once (an unknown document, a refused token)", async () => {
    const run = follow([{ status: 404, code: "not_found" }]);
    await expect(run.result).rejects.toBeInstanceOf(ApiError);
    expect(run.requests).toHaveLength(1);
  });

  it("stops when aborted", async () => {
    const { fakeFetch } = scripted([{ events: [[1, "queued"]], then: "end" }], { status: "parsing" });
    const client = new DocshelfClient({ baseUrl: "http://docshelf.test", token: "t", fetch: fakeFetch });
    const abort = new AbortController();
    const result = followDocument(client, "doc_1", { onEvent: () => abort.abort(), signal: abort.signal });
    await expect(result).rejects.toThrow(/aborted/);
  });
});

describe("askStream", () => {
  const answer = {
    question: "q",
    answer: "Yes [1].",
    mode: "llm",
    citations: [{ n: 1, chunk_id: "c", label: "a.md#1" }],
  };
  const client = (body: string) =>
    new DocshelfClient({
      baseUrl: "http://docshelf.test",
      token: "t",
      fetch: (_input, init) => {
        expect(new Headers(init?.headers).get("Accept")).toBe("text/event-stream");
        return Promise.resolve(new Response(body, { headers: { "Content-Type": "text/event-stream" } }));
      },
    });

  it("hands over the sources, each sentence, and returns the done answer", async () => {
    const body =
      `event: sources\ndata: {"sources": [{"n": 1, "chunk_id": "c", "label": "a.md#1"}]}\n\n` +
      `event: text\ndata: {"text": "Yes [1]."}\n\n` +
      `event: done\ndata: ${JSON.stringify(answer)}\n\n`;
    const seen: string[] = [];
    const done = await askStream(client(body), "q", {
      onSources: (s) => seen.push(`sources ${s.length}`),
      onText: (t) => seen.push(`text ${t}`),
    });
    expect(seen).toEqual(["sources 1", "text Yes [1]."]);
    expect(done).toEqual(answer);
  });

  it("says so when the stream ends before done, or sends something that is not JSON", async () => {
    const none = { onSources: () => undefined, onText: () => undefined };
    await expect(askStream(client(`event: text\ndata: {"text": "a"}\n\n`), "q", none)).rejects.toThrow(
      /ask again/,
    );
    await expect(askStream(client("event: text\ndata: nope\n\n"), "q", none)).rejects.toThrow(
      /not JSON: nope/,
    );
  });
});
