// Server-Sent Events: a parser of the `text/event-stream` format (WHATWG HTML §9.2) and a
// follower of one document's stages that reconnects with Last-Event-ID until a terminal
// stage. `EventSource` is not used: it cannot send the Authorization header.

import {
  type Answer,
  type AnswerCitation,
  ApiError,
  type DocshelfClient,
  Unreachable,
  isAbort,
  networkReason,
} from "./api";

export interface SseMessage {
  /** The `id:` in force (the last one seen, as the format says), or undefined. */
  id: string | undefined;
  event: string;
  data: string;
  /** A `retry:` field in this message, in milliseconds. */
  retry?: number;
}

/** Incremental parser: feed it text as it arrives, take the complete messages. */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private lastId: string | undefined;
  private retry: number | undefined;
  private sawCR = false;

  push(text: string): SseMessage[] {
    const out: SseMessage[] = [];
    let chunk = text;
    if (this.sawCR && chunk.startsWith("\n")) chunk = chunk.slice(1); // CRLF split across pushes
    this.sawCR = chunk.endsWith("\r");
    this.buffer += chunk;
    const lines = this.buffer.split(/\r\n|\r|\n/);
    this.buffer = lines.pop() ?? "";
    for (const line of lines) {
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const retry = this.retry;
    this.retry = undefined;
    if (this.data.length === 0) {
      this.event = "";
      return undefined;
    }
    const message: SseMessage = {
      id: this.lastId,
      event: this.event || "message",
      data: this.data.join("\n"),
    };
    if (retry !== undefined) message.retry = retry;
    this.data = [];
    this.event = "";
    return message;
  }
}

/** The messages of a response body, as they arrive. A message cut off by the end is dropped. */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
  }
}

export const TERMINAL_STAGES: ReadonlySet<string> = new Set(["complete", "failed"]);

/** One `stage` event of /v1/documents/{id}/events. */
export interface StageEvent {
  id: string | undefined;
  stage: string;
  progressPct: number | null;
  message: string;
}

export function stageEvent(message: SseMessage): StageEvent {
  let data: { stage?: unknown; progress_pct?: unknown; message?: unknown };
  try {
    data = JSON.parse(message.data) as typeof data;
  } catch {
    throw new Error(`The server sent an event that is not JSON: ${message.data.slice(0, 80)}`);
  }
  if (typeof data.stage !== "string") {
    throw new Error(`The server sent an event without a stage: ${message.data.slice(0, 80)}`);
  }
  return {
    id: message.id,
    stage: data.stage,
    progressPct: typeof data.progress_pct === "number" ? data.progress_pct : null,
    message: typeof data.message === "string" ? data.message : "",
  };
}

export interface FollowOptions {
  /** Resume after this event id (the last one already seen). */
  lastEventId?: string;
  onEvent: (event: StageEvent) => void;
  /** Called before each reconnection, with the id it resumes after. */
  onReconnect?: (lastEventId: string | undefined, attempt: number) => void;
  signal?: AbortSignal;
  /** Consecutive failed connections before giving up (default 6). */
  maxFailures?: number;
  /** Delay before reconnection `attempt` (1-based), in ms. */
  backoff?: (attempt: number, serverRetry: number | undefined) => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface FollowResult {
  stage: "complete" | "failed";
  message: string;
  lastEventId: string | undefined;
}

export class StreamGaveUp extends Error {
  constructor(
    readonly attempts: number,
    readonly reason: string,
  ) {
    super(`Lost the progress stream after ${attempts} attempts: ${reason}`);
    this.name = "StreamGaveUp";
  }
}

export const defaultBackoff = (attempt: number, serverRetry: number | undefined): number =>
  Math.min(10_000, (serverRetry ?? 250) * 2 ** (attempt - 1));

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}

function abortError(): Error {
  const error = new Error("The operation was aborted");
  error.name = "AbortError";
  return error;
}

/**
 * Follows a document's stages until `complete` or `failed`. A dropped connection (or a
 * stream that ends before a terminal stage) is reopened with Last-Event-ID, so no event is
 * seen twice or missed. When a stream ends with nothing new, the document's record says
 * whether it is already done (resuming after its last event). HTTP errors other than 5xx
 * are thrown at once; after `maxFailures` connections in a row that gave nothing,
 * StreamGaveUp.
 */
export async function followDocument(
  client: DocshelfClient,
  documentId: string,
  options: FollowOptions,
): Promise<FollowResult> {
  const { onEvent, signal } = options;
  const maxFailures = options.maxFailures ?? 6;
  const backoff = options.backoff ?? defaultBackoff;
  const sleep = options.sleep ?? abortableSleep;
  let last = options.lastEventId;
  let failures = 0;
  let serverRetry: number | undefined;
  let reason = "";
  for (let connection = 0; ; connection++) {
    if (signal?.aborted) throw abortError();
    if (connection > 0) {
      if (failures >= maxFailures) throw new StreamGaveUp(failures, reason);
      if (failures > 0) await sleep(backoff(failures, serverRetry), signal);
      if (signal?.aborted) throw abortError();
      options.onReconnect?.(last, connection);
    }
    let progressed = false;
    try {
      const response = await client.openDocumentEvents(documentId, last, signal);
      if (!response.body) throw new Error("the response has no body");
      for await (const message of readEventStream(response.body)) {
        if (message.retry !== undefined) serverRetry = message.retry;
        if (message.event !== "stage") continue;
        const event = stageEvent(message);
        if (event.id !== undefined) last = event.id;
        progressed = true;
        failures = 0;
        onEvent(event);
        if (event.stage === "complete" || event.stage === "failed") {
          return { stage: event.stage, message: event.message, lastEventId: last };
        }
      }
      // The server ended the stream before a terminal stage: done already, or cut off?
      if (!progressed) {
        const detail = await client.document(documentId);
        if (detail.status === "complete" || detail.status === "failed") {
          const message = detail.status === "failed" ? (detail.job?.last_error ?? "") : "";
          return { stage: detail.status, message, lastEventId: last };
        }
        failures += 1;
        reason = "the stream ended before the document was done";
      }
    } catch (error) {
      if (isAbort(error) || signal?.aborted) throw error;
      if (error instanceof ApiError && error.status < 500) throw error;
      if (!(error instanceof ApiError || error instanceof Unreachable || isStreamError(error))) {
        throw error;
      }
      if (!progressed) failures += 1;
      reason = error instanceof Unreachable ? error.reason : networkReason(error);
    }
  }
}

/** An error from reading the body: the connection dropped in the middle of the stream. */
function isStreamError(error: unknown): boolean {
  return error instanceof TypeError || (error instanceof Error && "code" in error);
}

export interface AskProgress {
  onSources: (sources: AnswerCitation[]) => void;
  /** One verified sentence of the answer, in order. */
  onText: (text: string) => void;
}

/**
 * A streamed answer: `sources`, then `text` sentences, then `done` with the whole answer
 * (the same JSON as without streaming), which is returned. Not resumed when cut: an answer
 * is not a record on the server, so the caller asks again.
 */
export async function askStream(
  client: DocshelfClient,
  question: string,
  progress: AskProgress,
  signal?: AbortSignal,
): Promise<Answer> {
  const response = await client.openAskStream(question, signal);
  if (!response.body) throw new Error("The answer stream has no body");
  for await (const message of readEventStream(response.body)) {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      throw new Error(`The server sent an answer event that is not JSON: ${message.data.slice(0, 80)}`);
    }
    if (message.event === "sources") progress.onSources((data as { sources: AnswerCitation[] }).sources);
    else if (message.event === "text") progress.onText((data as { text: string }).text);
    else if (message.event === "done") return data as Answer;
  }
  throw new Error("The answer stream ended before the answer was done; ask again");
}
