// The Node transport against a local HTTP server: bodies sent and read, a body streamed
// as it is written, aborts, and a refused connection in words.

import * as http from "node:http";
import { type AddressInfo } from "node:net";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DocshelfClient, Unreachable, isAbort } from "../src/api";
import { nodeFetch } from "../src/http";
import { freePort } from "./live-server";

let server: http.Server;
let base: string;
/** Lets the streaming handler write its second part. */
let release: () => void = () => {};

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (request.url === "/echo") {
      let body = "";
      request.setEncoding("utf8");
      request.on("data", (d: string) => (body += d));
      request.on("end", () => {
        response.writeHead(201, { "Content-Type": "application/json", "X-Seen": "yes" });
        response.end(
          JSON.stringify({
            method: request.method,
            body,
            length: request.headers["content-length"],
            auth: request.headers.authorization,
          }),
        );
      });
      return;
    }
    if (request.url === "/stream") {
      response.writeHead(200, { "Content-Type": "text/event-stream" });
      response.write("data: first\n\n");
      const second = new Promise<void>((resolve) => (release = resolve));
      void second.then(() => response.end("data: second\n\n"));
      return;
    }
    if (request.url === "/hang") {
      response.writeHead(200);
      response.write("x");
      return; // never ends
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("nodeFetch", () => {
  it("sends the method, headers and body (its length in bytes) and reads status, headers and JSON", async () => {
    const response = await nodeFetch(`${base}/echo`, {
      method: "POST",
      headers: { Authorization: "Bearer t" },
      body: "héllo",
    });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get("x-seen")).toBe("yes");
    expect(await response.json()).toEqual({ method: "POST", body: "héllo", length: "6", auth: "Bearer t" });
  });

  it("hands over the body as it arrives, before the server has finished it", async () => {
    const response = await nodeFetch(`${base}/stream`, {});
    const decoder = new TextDecoder();
    const parts: string[] = [];
    for await (const chunk of response.body ?? []) {
      parts.push(decoder.decode(chunk));
      if (parts.length === 1) release(); // only now may the server write the rest
    }
    expect(parts.join("")).toBe("data: first\n\ndata: second\n\n");
  });

  it("stops reading a body when aborted", async () => {
    const abort = new AbortController();
    const response = await nodeFetch(`${base}/hang`, { signal: abort.signal });
    const reading = (async () => {
      for await (const _ of response.body ?? []) abort.abort();
    })();
    const error = await reading.catch((e: unknown) => e);
    expect(isAbort(error)).toBe(true);
  });

  it("refuses at once when aborted before it starts", async () => {
    const abort = new AbortController();
    abort.abort();
    const error = await nodeFetch(`${base}/echo`, { signal: abort.signal }).catch((e: unknown) => e);
    expect(isAbort(error)).toBe(true);
  });

  it("reports a refused connection in words, through the client", async () => {
    const port = await freePort();
    const client = new DocshelfClient({ baseUrl: `http://127.0.0.1:${port}`, token: "t", fetch: nodeFetch });
    const error = await client.verify().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Unreachable);
    expect((error as Unreachable).reason).toBe("connection refused");
  });
});
