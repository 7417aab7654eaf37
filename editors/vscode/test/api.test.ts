// The HTTP client's edges: the server URL, errors from any body, network failures named.

import { describe, expect, it } from "vitest";

import {
  ApiError,
  DocshelfClient,
  type Fetch,
  Unreachable,
  networkReason,
  normalizeBaseUrl,
} from "../src/api";

const client = (fetch: Fetch) =>
  new DocshelfClient({ baseUrl: "http://docshelf.test/", token: "tok", fetch });

describe("normalizeBaseUrl", () => {
  it("drops trailing slashes and refuses what is not an http(s) URL", () => {
    expect(normalizeBaseUrl(" http://127.0.0.1:8750/// ")).toBe("http://127.0.0.1:8750");
    expect(() => normalizeBaseUrl("127.0.0.1:8750")).toThrow(
      /not a URL: "127.0.0.1:8750" \(write it as http:\/\/host:port\)/,
    );
    expect(() => normalizeBaseUrl("not a url")).toThrow(/not a URL: "not a url"/);
    expect(() => normalizeBaseUrl("javascript:alert(1)")).toThrow(/must start with http/);
  });
});

describe("DocshelfClient", () => {
  it("sends the bearer token and reads the error body's code and message", async () => {
    let auth: string | null = null;
    const c = client((_input, init) => {
      auth = new Headers(init?.headers).get("Authorization");
      return Promise.resolve(
        Response.json(
          { error: { code: "too_large", message: "file is over the 100 MB upload limit" } },
          { status: 413 },
        ),
      );
    });
    const error = await c.upload("big.md", new Uint8Array([1])).catch((e: unknown) => e);
    expect(auth).toBe("Bearer tok");
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 413,
      code: "too_large",
      message: "file is over the 100 MB upload limit",
    });
  });

  it("keeps the status line when the error body is not JSON (a proxy's HTML page)", async () => {
    const c = client(() =>
      Promise.resolve(new Response("<h1>Bad gateway</h1>", { status: 502, statusText: "Bad Gateway" })),
    );
    await expect(c.verify()).rejects.toMatchObject({
      status: 502,
      code: "error",
      message: "502 Bad Gateway",
    });
  });

  it("returns the receipt: the caller's own copy's stage", async () => {
    const body = { document_id: "doc_1", status: "complete", fingerprint: "f" };
    const again = client(() => Promise.resolve(Response.json(body, { status: 202 })));
    expect(await again.upload("a.md", new Uint8Array([1]))).toEqual(body);
  });

  it("names network failures", async () => {
    const down = client(() =>
      Promise.reject(new TypeError("fetch failed", { cause: { code: "ENOTFOUND" } })),
    );
    const error = await down.verify().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Unreachable);
    expect((error as Error).message).toBe("Cannot reach docshelf at http://docshelf.test: host not found");
    expect(networkReason(new TypeError("x", { cause: { message: "self-signed certificate" } }))).toBe(
      "self-signed certificate",
    );
  });

  it("escapes ids in paths", async () => {
    const urls: string[] = [];
    const c = client((input) => {
      urls.push(input instanceof Request ? input.url : input.toString());
      return Promise.resolve(Response.json({}));
    });
    await c.document("../../v1/users");
    expect(urls[0]).toBe("http://docshelf.test/v1/documents/..%2F..%2Fv1%2Fusers");
  });
});
