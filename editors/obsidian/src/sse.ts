// Server-Sent Events: a parser of the `text/event-stream` format (WHATWG HTML §9.2) and the
// reader of a streamed answer. `EventSource` is not used: it cannot send the Authorization
// header (nor leave Obsidian's origin without CORS).

import { type Answer, type AnswerCitation, type DocshelfClient } from "./api";

export interface SseMessage {
  /** The `id:` in force (the last one seen, as the format says), or undefined. */
  id: string | undefined;
  event: string;
  data: string;
}

/** Incremental parser: feed it text as it arrives, take the complete messages. */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private lastId: string | undefined;
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
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    if (this.data.length === 0) {
      this.event = "";
      return undefined;
    }
    const message = { id: this.lastId, event: this.event || "message", data: this.data.join("\n") };
    this.data = [];
    this.event = "";
    return message;
  }
}

/** The messages of a response body, as they arrive. A message cut off by the end is dropped. */
export async function* readEventStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseMessage> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    yield* parser.push(decoder.decode(chunk, { stream: true }));
  }
  yield* parser.push(decoder.decode());
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
