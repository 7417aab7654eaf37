// Answers for a fake transport: a JSON body, or a body that arrives in the chunks given.

import { type Fetch, type HttpRequest, type HttpResponse } from "../src/api";

export function streamed(
  status: number,
  chunks: readonly string[],
  contentType = "text/event-stream",
): HttpResponse {
  const encoder = new TextEncoder();
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: "",
    headers: { get: (name) => (name.toLowerCase() === "content-type" ? contentType : null) },
    json: () => Promise.resolve(JSON.parse(chunks.join("")) as unknown),
    body: (async function* () {
      for (const chunk of chunks) {
        await Promise.resolve();
        yield encoder.encode(chunk);
      }
    })(),
  };
}

export function json(status: number, body: unknown): HttpResponse {
  return streamed(status, [JSON.stringify(body)], "application/json");
}

export interface Sent extends HttpRequest {
  url: string;
}

/** A transport that records each request and answers with `answer(request)`. */
export function fakeFetch(answer: (request: Sent) => HttpResponse | Promise<HttpResponse>): {
  fetch: Fetch;
  sent: Sent[];
} {
  const sent: Sent[] = [];
  return {
    sent,
    fetch: async (url, init) => {
      const request = { url, ...init };
      sent.push(request);
      return answer(request);
    },
  };
}
