// The API client against a fake transport: what it sends, how it reads errors.

import { describe, expect, it } from "vitest";

import { ApiError, DocshelfClient, Unreachable, normalizeBaseUrl } from "../src/api";
import { fakeFetch, json } from "./responses";

describe("DocshelfClient", () => {
  it("sends the bearer token and JSON, and a search's filters only when there are some", async () => {
    const { fetch, sent } = fakeFetch(() => json(200, { query: "q", mode: "lexical", hits: [] }));
    const client = new DocshelfClient({ baseUrl: "http://h:1/", token: "dsk_t", fetch });
    await client.search("raft", 7);
    await client.search("raft", 7, { source: "src_v" });
    expect(sent[0].url).toBe("http://h:1/v1/search");
    expect(sent[0].method).toBe("POST");
    expect(sent[0].headers).toMatchObject({
      Authorization: "Bearer dsk_t",
      "Content-Type": "application/json",
    });
    expect(JSON.parse(sent[0].body ?? "")).toEqual({ query: "raft", limit: 7 });
    expect(JSON.parse(sent[1].body ?? "")).toEqual({ query: "raft", limit: 7, filters: { source: "src_v" } });
  });

  it("turns an error body into ApiError with its code and message", async () => {
    const { fetch } = fakeFetch(() =>
      json(401, { error: { code: "unauthorized", message: "Send a token" } }),
    );
    const client = new DocshelfClient({ baseUrl: "http://h:1", token: "bad", fetch });
    const error = await client.sources().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 401, code: "unauthorized", message: "Send a token" });
  });

  it("says why a server could not be reached", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    const client = new DocshelfClient({
      baseUrl: "http://127.0.0.1:1",
      token: "t",
      fetch: () => Promise.reject(refused),
    });
    const error = await client.verify().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Unreachable);
    expect((error as Unreachable).reason).toBe("connection refused");
  });

  it("accepts http(s) server URLs only", () => {
    expect(normalizeBaseUrl(" http://127.0.0.1:8750/// ")).toBe("http://127.0.0.1:8750");
    expect(() => normalizeBaseUrl("ftp://h/")).toThrow(/http:\/\/ or https:\/\/, not ftp:/);
    expect(() => normalizeBaseUrl("not a url")).toThrow(/not a URL/);
  });
});
