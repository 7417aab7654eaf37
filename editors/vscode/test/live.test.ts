// The SSE and upload clients against a real `docshelf serve` (lexical only, loopback).

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ApiError, DocshelfClient, Unreachable } from "../src/api";
import { explain } from "../src/messages";
import { type StageEvent, followDocument, readEventStream, stageEvent } from "../src/sse";
import {
  DEDUP_MESSAGE,
  type UploadState,
  describe as describeState,
  retryUpload,
  runUpload,
} from "../src/upload";
import { encryptedPdf } from "./fixtures";
import { type LiveServer, freePort, missingServer, startServer } from "./live-server";
import { cuttingProxy } from "./proxy";

const skip = missingServer();
if (skip) console.warn(`SKIPPED live-server tests: ${skip}`);

const ORDER = ["queued", "parsing", "chunking", "embedding", "indexing", "complete"];
const fast = { backoff: () => 50 };

let unique = 0;
/** A Markdown note no other test uploads (each upload of new bytes is a new document). */
function note(title: string): Uint8Array {
  unique += 1;
  const body = `# ${title}\n\n## Elections\n\nA follower that hears no heartbeat becomes a candidate (${unique}, ${Date.now()}).\n`;
  return new TextEncoder().encode(body);
}

function states(): { seen: UploadState[]; onState: (s: UploadState) => void } {
  const seen: UploadState[] = [];
  return { seen, onState: (s) => seen.push(s) };
}

describe.skipIf(skip !== undefined)("against a real docshelf serve", () => {
  let server: LiveServer;
  let alice: DocshelfClient;
  let bob: DocshelfClient;
  let aliceToken: string;

  beforeAll(async () => {
    server = await startServer();
    aliceToken = await server.createUser("alice");
    alice = new DocshelfClient({ baseUrl: server.baseUrl, token: aliceToken });
    bob = new DocshelfClient({ baseUrl: server.baseUrl, token: await server.createUser("bob") });
  });

  afterAll(async () => {
    await server?.stop();
  });

  it("streams a new document's stages in order, to complete", async () => {
    const receipt = await alice.upload("raft.md", note("Raft"));
    expect(receipt.status).toBe("queued");
    const events: StageEvent[] = [];
    const result = await followDocument(alice, receipt.document_id, { onEvent: (e) => events.push(e) });
    expect(result.stage).toBe("complete");
    const stages = events.map((e) => e.stage);
    expect(stages[0]).toBe("queued");
    expect(stages[stages.length - 1]).toBe("complete");
    expect(stages).toContain("parsing");
    expect(stages).toContain("indexing");
    const ranks = stages.map((s) => ORDER.indexOf(s));
    expect(ranks.every((r) => r >= 0)).toBe(true);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(result.lastEventId).toBe(events[events.length - 1].id);
  });

  it("resumes a dropped stream with Last-Event-ID: every event once, in order", async () => {
    const direct = await alice.upload("dropped.md", note("Dropped"));
    const reference: StageEvent[] = [];
    await followDocument(alice, direct.document_id, { onEvent: (e) => reference.push(e) });

    const proxy = await cuttingProxy(server.baseUrl);
    try {
      const viaProxy = new DocshelfClient({ baseUrl: proxy.baseUrl, token: aliceToken });
      const events: StageEvent[] = [];
      const reconnects: (string | undefined)[] = [];
      const result = await followDocument(viaProxy, direct.document_id, {
        ...fast,
        onEvent: (e) => events.push(e),
        onReconnect: (last) => reconnects.push(last),
      });
      expect(result.stage).toBe("complete");
      // The first connection was cut after its first event; the second resumed after it.
      expect(proxy.lastEventIds[0]).toBeNull();
      expect(proxy.lastEventIds[1]).toBe(reference[0].id);
      expect(reconnects[0]).toBe(reference[0].id);
      expect(events.map((e) => [e.id, e.stage])).toEqual(reference.map((e) => [e.id, e.stage]));
    } finally {
      await proxy.close();
    }
  });

  it("ends at once when resumed after a finished document's last event", async () => {
    const receipt = await alice.upload("done.md", note("Done"));
    const first = await followDocument(alice, receipt.document_id, { onEvent: () => undefined });
    const again: StageEvent[] = [];
    const result = await followDocument(alice, receipt.document_id, {
      lastEventId: first.lastEventId,
      onEvent: (e) => again.push(e),
    });
    expect(again).toEqual([]);
    expect(result.stage).toBe("complete");
  });

  it("uploads a new file through every stage to complete", async () => {
    const { seen, onState } = states();
    const final = await runUpload(alice, "new.md", () => Promise.resolve(note("New")), { onState });
    expect(final.phase).toBe("complete");
    expect(final.phase === "complete" && final.deduplicated).toBe(false);
    expect(seen[0].phase).toBe("uploading");
    const stages = seen.flatMap((s) => (s.phase === "processing" ? [s.stage] : []));
    expect(stages[0]).toBe("queued");
    expect(stages).toContain("parsing");
    expect(describeState(final)).toBe("new.md: Complete");
  });

  it("takes the dedup fast path for the caller's own processed bytes, never for another user's", async () => {
    const bytes = note("Shared");
    const first = await runUpload(alice, "shared.md", () => Promise.resolve(bytes), {
      onState: () => undefined,
    });
    expect(first.phase).toBe("complete");

    const { seen, onState } = states();
    const again = await runUpload(alice, "shared.md", () => Promise.resolve(bytes), { onState });
    expect(again).toMatchObject({ phase: "complete", deduplicated: true });
    expect(seen.map((s) => s.phase)).toEqual(["uploading", "complete"]); // no stream at all
    expect(describeState(again)).toBe(`shared.md: ${DEDUP_MESSAGE}`);

    const linked = await runUpload(bob, "mine-too.md", () => Promise.resolve(bytes), {
      onState: () => undefined,
    });
    // The server answers bob as for new bytes (it never tells one user what another
    // holds): his own copy is queued and completes, with no fast-path message.
    expect(linked).toMatchObject({ phase: "complete", deduplicated: false });
    const bobs = await bob.allDocuments();
    expect(bobs.map((d) => d.id)).toContain(first.phase === "complete" ? first.documentId : "");
  });

  it("shows a failing file's reason, and Retry runs the job again", async () => {
    const { seen, onState } = states();
    // A failure a retry may help: an encrypted PDF on a server with a PDF password (bytes
    // that are not UTF-8 are not retried: they fail for good).
    const locked = encryptedPdf("live");
    const failed = await runUpload(alice, "locked.pdf", () => Promise.resolve(locked), { onState });
    expect(failed.phase).toBe("failed");
    if (failed.phase !== "failed") return;
    expect(failed.reason).toMatch(/encrypted \(DOCSHELF_PDF_PASSWORD does not open it\)/);
    expect(failed.documentId).toBeDefined();
    expect(describeState(failed)).toMatch(/^locked\.pdf: Failed while \w+ — .*encrypted/);
    const before = await alice.document(failed.documentId!);
    expect(before.job?.status).toBe("failed");

    seen.length = 0;
    const again = await retryUpload(alice, failed, () => Promise.resolve(locked), { onState });
    // The new attempt's own stages (after the old ones: Last-Event-ID), failing again.
    const stages = seen.flatMap((s) => (s.phase === "processing" ? [s.stage] : []));
    expect(stages[0]).toBe("queued");
    // Every event seen is the new attempt's: the stream resumed after the old "failed".
    const resumedAfter = Number(failed.lastEventId);
    const ids = seen.flatMap((s) =>
      s.phase === "processing" && s.lastEventId ? [Number(s.lastEventId)] : [],
    );
    expect(ids[0]).toBe(resumedAfter); // the "retrying" state, before any event
    expect(ids.length).toBeGreaterThan(1);
    expect(ids.slice(1).every((id) => id > resumedAfter)).toBe(true);
    expect(again.phase).toBe("failed");
    expect(again.phase === "failed" && again.reason).toMatch(/encrypted/);
    const all: StageEvent[] = []; // the whole record, read raw: both attempts
    const response = await alice.openDocumentEvents(failed.documentId!, undefined);
    for await (const message of readEventStream(response.body!)) all.push(stageEvent(message));
    expect(all.filter((e) => e.stage === "failed")).toHaveLength(2); // two attempts on record
    expect(all.filter((e) => e.stage === "queued")).toHaveLength(2);
  });

  it("says a refused upload's reason (unsupported type), with nothing to retry on the server", async () => {
    const final = await runUpload(alice, "picture.png", () => Promise.resolve(new Uint8Array([1, 2, 3])), {
      onState: () => undefined,
    });
    expect(final).toMatchObject({ phase: "failed", documentId: undefined });
    expect(final.phase === "failed" && final.reason).toMatch(/\.md/); // the message lists the types
  });

  it("tells a refused token from an unreachable server", async () => {
    const wrong = new DocshelfClient({ baseUrl: server.baseUrl, token: "dsk_not-a-token" });
    const refused = await wrong.verify().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(401);
    expect(explain(refused, server.baseUrl)).toMatchObject({ action: "Sign in" });
    expect(explain(refused, server.baseUrl).text).toMatch(/refused the token/);

    const nobody = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const closed = new DocshelfClient({ baseUrl: nobody, token: "x" });
    const down = await closed.verify().catch((e: unknown) => e);
    expect(down).toBeInstanceOf(Unreachable);
    expect(explain(down, nobody).text).toContain(`cannot reach ${nobody} (connection refused)`);
  });

  it("searches and asks with citations", async () => {
    await runUpload(
      alice,
      "paxos.md",
      () =>
        Promise.resolve(
          new TextEncoder().encode(
            "# Paxos\n\n## Ballots\n\nA proposer picks a ballot number higher than any it has seen.\n",
          ),
        ),
      {
        onState: () => undefined,
      },
    );
    const result = await alice.search("ballot number", 5);
    const hit = result.hits.find((h) => h.text.includes("ballot number"));
    expect(hit?.citation.heading_path).toEqual(["Paxos", "Ballots"]);
    expect(hit?.citation.path).toMatch(/^upload:\/\//);
    const answer = await alice.ask("What does a proposer pick?");
    expect(answer.citations.length).toBeGreaterThan(0);
    const context = await alice.context(answer.citations[0].chunk_id);
    expect(context.citation.path).toBeTruthy();
  });
});
