// The plugin's transport: requests through Node's http/https modules (Obsidian's desktop
// app gives plugins Node), so no CORS check stands between the plugin and docshelf, and an
// answer's body streams as it arrives (Obsidian's requestUrl() waits for the whole of it,
// which an answer streamed sentence by sentence cannot wait for).

import * as http from "http";
import * as https from "https";

import { type Fetch, type HttpRequest, type HttpResponse, abortError } from "./api";

class NodeResponse implements HttpResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;

  constructor(private readonly message: http.IncomingMessage) {
    this.status = message.statusCode ?? 0;
    this.statusText = message.statusMessage ?? "";
    this.ok = this.status >= 200 && this.status < 300;
  }

  readonly headers = {
    get: (name: string): string | null => {
      const value = this.message.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(", ") : value;
    },
  };

  get body(): AsyncIterable<Uint8Array> {
    return this.message;
  }

  async json(): Promise<unknown> {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of this.message) text += decoder.decode(chunk as Uint8Array, { stream: true });
    return JSON.parse(text + decoder.decode());
  }
}

/** fetch() in the form the client wants, over http.request; string bodies only. */
export const nodeFetch: Fetch = (url: string, init: HttpRequest) =>
  new Promise<HttpResponse>((resolve, reject) => {
    const { signal } = init;
    if (signal?.aborted) return reject(abortError());
    const target = new URL(url);
    const transport = target.protocol === "https:" ? https : http;
    const headers: Record<string, string> = { ...init.headers };
    if (init.body !== undefined)
      headers["Content-Length"] = String(new TextEncoder().encode(init.body).length);
    let response: http.IncomingMessage | undefined;
    const request = transport.request(target, { method: init.method ?? "GET", headers }, (message) => {
      response = message;
      resolve(new NodeResponse(message));
    });
    const onAbort = (): void => {
      const error = abortError();
      response?.destroy(error); // a body being read ends with the same error
      request.destroy(error);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    request.on("close", () => signal?.removeEventListener("abort", onAbort));
    request.on("error", reject);
    request.end(init.body);
  });
