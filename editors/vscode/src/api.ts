// The client of docshelf's HTTP API (/v1, docs/api.md). Plain module: no `vscode` import,
// so it is tested against a fake fetch and a real `docshelf serve` alike.

export type Fetch = typeof fetch;

export interface Citation {
  label: string;
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
  citation: Citation;
}

export interface SearchResult {
  query: string;
  mode: string;
  hits: Hit[];
  notice?: string;
}

export interface DocumentRecord {
  id: string;
  title: string;
  path: string;
  /** The folder source it came from; null for an upload. */
  source_id: string | null;
  file_type: string;
  status: string;
  size_bytes: number;
  updated_at: number;
}

/** One of the caller's folder sources (`GET /v1/sources`). */
export interface SourceRecord {
  id: string;
  path: string;
  kind: string;
}

export interface Job {
  document_id: string;
  stage: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

export interface DocumentDetail extends DocumentRecord {
  job: Job | null;
}

export interface UploadReceipt {
  document_id: string;
  status: string;
  fingerprint: string;
}

export interface AnswerCitation {
  n: number;
  chunk_id: string;
  label: string;
}

export interface Answer {
  question: string;
  answer: string;
  mode: string;
  citations: AnswerCitation[];
  notice?: string;
}

export interface ChunkContext {
  chunk_id: string;
  mode: string;
  text: string;
  citation: Citation;
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

/** Why a fetch() failed without a response, in words (undici puts the code on `cause`). */
export function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  if (code && REASONS[code]) return REASONS[code];
  if (typeof cause?.message === "string" && cause.message) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

/** The server URL as typed in the settings, without trailing slashes; refuses non-HTTP ones. */
export function normalizeBaseUrl(raw: string): string {
  const trimmed = raw.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new Error(
      `docshelf.serverUrl is not a URL: ${JSON.stringify(trimmed)} (write it as http://host:port)`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`docshelf.serverUrl must start with http:// or https://, not ${url.protocol}`);
  }
  return trimmed.replace(/\/+$/, "");
}

async function apiError(response: Response): Promise<ApiError> {
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
  fetch?: Fetch;
}

export class DocshelfClient {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchImpl: Fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.token = options.token;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** One request; network failures become Unreachable, error statuses ApiError. */
  async send(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${this.token}`);
    if (!headers.has("Accept")) headers.set("Accept", "application/json");
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, { ...init, headers });
    } catch (error) {
      if (isAbort(error)) throw error;
      throw new Unreachable(this.baseUrl, networkReason(error));
    }
    if (!response.ok) throw await apiError(response);
    return response;
  }

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const response = await this.send(path, init);
    return (await response.json()) as T;
  }

  private post<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const init: RequestInit = { method: "POST", signal };
    if (body !== undefined) {
      init.headers = { "Content-Type": "application/json" };
      init.body = JSON.stringify(body);
    }
    return this.json<T>(path, init);
  }

  /** Checks the server answers and takes the token (a 401 throws ApiError). */
  async verify(): Promise<void> {
    await this.json("/v1/documents?limit=1");
  }

  async documents(limit = 200, offset = 0): Promise<DocumentRecord[]> {
    const query = new URLSearchParams({ limit: String(limit), offset: String(offset) });
    const page = await this.json<{ documents: DocumentRecord[] }>(`/v1/documents?${query}`);
    return page.documents;
  }

  /** Every document of the caller, page by page. */
  async allDocuments(pageSize = 200): Promise<DocumentRecord[]> {
    const all: DocumentRecord[] = [];
    for (let offset = 0; ; offset += pageSize) {
      const page = await this.documents(pageSize, offset);
      all.push(...page);
      if (page.length < pageSize) return all;
    }
  }

  async sources(): Promise<SourceRecord[]> {
    return (await this.json<{ sources: SourceRecord[] }>("/v1/sources")).sources;
  }

  document(documentId: string): Promise<DocumentDetail> {
    return this.json(`/v1/documents/${encodeURIComponent(documentId)}`);
  }

  /** POST the bytes as multipart field `file`. */
  async upload(name: string, bytes: Uint8Array, signal?: AbortSignal): Promise<UploadReceipt> {
    const form = new FormData();
    // Blob wants bytes over an ArrayBuffer: copy only when they sit on a shared one.
    const part =
      bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
    form.append("file", new Blob([part]), name);
    const response = await this.send("/v1/documents", { method: "POST", body: form, signal });
    // Always 202, whether or not the server knew the bytes (it never tells one
    // user what another holds); `status` is the caller's own copy's stage.
    return (await response.json()) as UploadReceipt;
  }

  retry(documentId: string): Promise<Job> {
    return this.post(`/v1/documents/${encodeURIComponent(documentId)}/retry`);
  }

  search(query: string, limit: number, signal?: AbortSignal): Promise<SearchResult> {
    return this.post("/v1/search", { query, limit }, signal);
  }

  ask(question: string, limit?: number, signal?: AbortSignal): Promise<Answer> {
    return this.post("/v1/ask", limit === undefined ? { question } : { question, limit }, signal);
  }

  /** POST /v1/ask with `Accept: text/event-stream`: the raw stream (see `askStream` in sse.ts). */
  openAskStream(question: string, signal?: AbortSignal): Promise<Response> {
    return this.send("/v1/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question }),
      signal,
    });
  }

  context(chunkId: string, mode = "snippet-window"): Promise<ChunkContext> {
    const query = new URLSearchParams({ mode });
    return this.json(`/v1/chunks/${encodeURIComponent(chunkId)}/context?${query}`);
  }

  /** Opens a document's event stream (SSE), resuming after `lastEventId` when given. */
  openDocumentEvents(
    documentId: string,
    lastEventId: string | undefined,
    signal?: AbortSignal,
  ): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (lastEventId) headers["Last-Event-ID"] = lastEventId;
    return this.send(`/v1/documents/${encodeURIComponent(documentId)}/events`, {
      headers,
      signal,
      cache: "no-store",
    });
  }
}
