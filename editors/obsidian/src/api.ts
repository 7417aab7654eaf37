// The client of docshelf's HTTP API (/v1, docs/api.md). Plain module: no `obsidian` import,
// so it is tested against a fake transport and a real `docshelf serve` alike. It sends
// through a `Fetch` of its own (http.ts: Node's http module), not the renderer's fetch():
// Obsidian's pages have the origin app://obsidian.md and docshelf answers no CORS
// preflight, so a fetch() from the plugin would be refused before it left.

export interface HttpRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** What the client reads of an answer (a WHATWG Response has all of it). */
export interface HttpResponse {
  ok: boolean;
  status: number;
  statusText: string;
  headers: { get(name: string): string | null };
  json(): Promise<unknown>;
  /** The body as it arrives; null when there is none. */
  body: AsyncIterable<Uint8Array> | null;
}

export type Fetch = (url: string, init: HttpRequest) => Promise<HttpResponse>;

export interface Citation {
  label: string;
  /** The document's path as the server indexed it: absolute for a folder's file. */
  path: string;
  title: string;
  heading_path: string[];
  chunk_index: number;
  page_start: number | null;
  page_end: number | null;
  /** Where the citation points in the document's text (the web page scrolls there). */
  anchor?: number | null;
}

export interface Hit {
  chunk_id: string;
  document_id: string;
  score: number;
  text: string;
  /** The text as a person reads it (markup removed); older servers leave it out. */
  display_text?: string;
  /** It matches the query neither by its words nor by meaning. */
  weak?: boolean;
  citation: Citation;
}

export interface SearchFilters {
  source?: string;
  path?: string;
  type?: string;
  tag?: string | string[];
}

export interface SearchResult {
  query: string;
  mode: string;
  hits: Hit[];
  notice?: string;
}

/** One of the caller's folder sources (`GET /v1/sources`). */
export interface SourceRecord {
  id: string;
  path: string;
  kind: string;
}

export interface AnswerCitation {
  n: number;
  chunk_id: string;
  label: string;
  /** The hit's citation (path, heading path, pages); servers before it leave it out. */
  citation?: Citation;
}

export interface Answer {
  question: string;
  answer: string;
  mode: string;
  citations: AnswerCitation[];
  notice?: string;
  /** false: the library does not answer the question (SPEC §5); absent on older servers. */
  answered?: boolean;
}

/** The server answered with an error status; `code` is the body's `error.code`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** No answer at all: the server is down, the host unknown, the connection cut. */
export class Unreachable extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
  ) {
    super(`Cannot reach docshelf at ${baseUrl}: ${reason}`);
    this.name = "Unreachable";
  }
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  ECONNRESET: "the connection was reset",
  ETIMEDOUT: "the connection timed out",
  EHOSTUNREACH: "host unreachable",
};

/** Why a request failed without a response, in words (the code is on the error or its cause). */
export function networkReason(error: unknown): string {
  for (const e of [error, (error as { cause?: unknown } | null)?.cause]) {
    const code = (e as { code?: unknown } | null)?.code;
    if (typeof code === "string" && REASONS[code]) return REASONS[code];
  }
  return error instanceof Error ? error.message : String(error);
}

export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

export function abortError(): Error {
  const error = new Error("The operation was aborted");
  error.name = "AbortError";
  return error;
}

/** The server URL as typed in the settings, without trailing slashes; refuses non-HTTP ones. */
export function normalizeBaseUrl(raw: string): string {
  const trimmed = raw.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new Error(`The server URL is not a URL: ${JSON.stringify(trimmed)} (write it as http://host:port)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`The server URL must start with http:// or https://, not ${url.protocol}`);
  }
  return trimmed.replace(/\/+$/, "");
}

async function apiError(response: HttpResponse): Promise<ApiError> {
  let code = "error";
  let message = `${response.status} ${response.statusText}`.trim();
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

export interface ClientOptions {
  baseUrl: string;
  token: string;
  fetch: Fetch;
}

export class DocshelfClient {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchImpl: Fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.token = options.token;
    this.fetchImpl = options.fetch;
  }

  /** One request; network failures become Unreachable, error statuses ApiError. */
  async send(path: string, init: HttpRequest = {}): Promise<HttpResponse> {
    const headers: Record<string, string> = {
      Accept: "application/json",
      ...init.headers,
      Authorization: `Bearer ${this.token}`,
    };
    let response: HttpResponse;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, { ...init, headers });
    } catch (error) {
      if (isAbort(error)) throw error;
      throw new Unreachable(this.baseUrl, networkReason(error));
    }
    if (!response.ok) throw await apiError(response);
    return response;
  }

  private async json<T>(path: string, init: HttpRequest = {}): Promise<T> {
    const response = await this.send(path, init);
    return (await response.json()) as T;
  }

  private post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.json<T>(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
  }

  /** Checks the server answers and takes the token (a 401 throws ApiError). */
  async verify(): Promise<void> {
    await this.json("/v1/documents?limit=1");
  }

  async sources(): Promise<SourceRecord[]> {
    return (await this.json<{ sources: SourceRecord[] }>("/v1/sources")).sources;
  }

  search(query: string, limit: number, filters?: SearchFilters, signal?: AbortSignal): Promise<SearchResult> {
    const body = filters && Object.keys(filters).length > 0 ? { query, limit, filters } : { query, limit };
    return this.post("/v1/search", body, signal);
  }

  ask(question: string, signal?: AbortSignal): Promise<Answer> {
    return this.post("/v1/ask", { question }, signal);
  }

  /** POST /v1/ask with `Accept: text/event-stream`: the raw stream (see `askStream` in sse.ts). */
  openAskStream(question: string, signal?: AbortSignal): Promise<HttpResponse> {
    return this.send("/v1/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question }),
      signal,
    });
  }
}
