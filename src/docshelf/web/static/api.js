// The page's client of the HTTP API (/v1). Every request carries the bearer token in
// the Authorization header — including the Server-Sent Events streams, which are read
// with fetch() and a stream parser because a browser's EventSource cannot send headers.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  static async from(response) {
    let code = "error";
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.error) ({ code, message } = body.error);
    } catch {
      // not JSON: keep the status line
    }
    return new ApiError(response.status, code, message);
  }
}

/** fetch(), with a network failure (no answer at all) as an ApiError of status 0 that the
 * views offer to retry; an abort stays an abort. */
async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (init?.signal?.aborted) throw error;
    throw new ApiError(0, "network", "Cannot reach the docshelf server; check the connection.");
  }
}

/** Whether trying again may help: no answer, or the server was unavailable. */
export function retryable(error) {
  return error instanceof ApiError && (error.status === 0 || error.status >= 500);
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

const BUSY_TRIES = 4; // a request and three more while the server says it is busy

/** `send`, tried again while the server answers 503 with a short `Retry-After` (it is
 * busy, as with page renders beyond its limit), after the time it asks for. */
async function sendPatiently(path, init) {
  for (let tries = 1; ; tries++) {
    const response = await send(path, init);
    const wait = Number(response.headers.get("Retry-After"));
    if (response.status !== 503 || tries === BUSY_TRIES || !(wait > 0 && wait <= 10)) {
      return response;
    }
    await sleep(wait * 1000, init?.signal);
    init?.signal?.throwIfAborted();
  }
}

export class Api {
  /** `onUnauthorized` is called when the server refuses the token (401). */
  constructor(token, onUnauthorized = () => {}) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  headers(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async request(method, path, { json, signal } = {}) {
    const init = { method, headers: this.headers({ Accept: "application/json" }), signal };
    if (json !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(json);
    }
    const response = await send(path, init);
    if (!response.ok) {
      const error = await ApiError.from(response);
      if (error.status === 401) this.onUnauthorized(error);
      throw error;
    }
    return response.json();
  }

  search(body, signal) {
    return this.request("POST", "/v1/search", { json: body, signal });
  }

  /** A grounded answer as Server-Sent Events (`sources`, `text`..., `done`), each passed
   * to `onEvent({event, data})`. Not resumed: a new question is a new request. */
  async askStream(question, signal, onEvent, notebook = null, conversation = null) {
    const body = { question };
    if (notebook) body.notebook = notebook;
    if (conversation) body.conversation = conversation; // "new" starts one
    const response = await send("/v1/ask", {
      method: "POST",
      headers: this.headers({ Accept: "text/event-stream", "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) {
      const error = await ApiError.from(response);
      if (error.status === 401) this.onUnauthorized(error);
      throw error;
    }
    await readEventStream(response.body, onEvent);
  }

  /** A hit's context; with its citation's `anchor`, under the heading the hit is cited under. */
  context(chunkId, mode, anchor = null, notebook = null) {
    const query = new URLSearchParams({ mode });
    if (anchor !== null && anchor !== undefined) query.set("anchor", String(anchor));
    if (notebook) query.set("notebook", notebook);
    return this.request("GET", `/v1/chunks/${encodeURIComponent(chunkId)}/context?${query}`);
  }

  /** A page of the caller's documents; `filters` in the search vocabulary, `q` words of
   * the title or path, `status`, `sort` (path, title, type, status, added, size). */
  documents({ limit = 200, offset = 0, filters = {}, q = "", status = "", sort = "" } = {}) {
    const query = filterParams(filters);
    query.set("limit", String(limit));
    query.set("offset", String(offset));
    if (q) query.set("q", q);
    if (status) query.set("status", status);
    if (sort) query.set("sort", sort);
    return this.request("GET", `/v1/documents?${query}`);
  }

  /** Document counts per facet over the library narrowed by `filters` (/v1/facets). */
  facets(filters = {}, signal, notebook = null) {
    const query = filterParams(filters);
    if (notebook) query.set("notebook", notebook);
    return this.request("GET", `/v1/facets?${query}`, { signal });
  }

  /** The caller's notebooks, then those shared with them (read only). */
  notebooks() {
    return this.request("GET", "/v1/notebooks");
  }

  createNotebook(body) {
    return this.request("POST", "/v1/notebooks", { json: body });
  }

  changeNotebook(notebookId, change) {
    return this.request("PATCH", `/v1/notebooks/${encodeURIComponent(notebookId)}`, {
      json: change,
    });
  }

  deleteNotebook(notebookId) {
    return this.request("DELETE", `/v1/notebooks/${encodeURIComponent(notebookId)}`);
  }

  shareNotebook(notebookId, user) {
    const path = `/v1/notebooks/${encodeURIComponent(notebookId)}/readers`;
    return this.request("PUT", path, { json: { user } });
  }

  unshareNotebook(notebookId, userId) {
    const path = `/v1/notebooks/${encodeURIComponent(notebookId)}/readers/${encodeURIComponent(userId)}`;
    return this.request("DELETE", path);
  }

  document(documentId) {
    return this.request("GET", `/v1/documents/${encodeURIComponent(documentId)}`);
  }

  sources() {
    return this.request("GET", "/v1/sources");
  }

  /** A document opened at a citation (`chunk`), or at a page of a PDF. */
  view(documentId, { chunk = null, page = null, at = null } = {}) {
    const query = new URLSearchParams();
    if (chunk) query.set("chunk", chunk);
    if (page) query.set("page", String(page));
    if (chunk && at !== null) query.set("at", String(at));
    const tail = query.size ? `?${query}` : "";
    return this.request("GET", `/v1/documents/${encodeURIComponent(documentId)}/view${tail}`);
  }

  /** The bytes at an API path (a page image, a download) as a Blob: fetched with the
   * token, since an <img src> or a link cannot send the Authorization header. */
  async blob(path, signal) {
    const response = await sendPatiently(path, { headers: this.headers(), signal });
    if (!response.ok) {
      const error = await ApiError.from(response);
      if (error.status === 401) this.onUnauthorized(error);
      throw error;
    }
    const disposition = response.headers.get("Content-Disposition") ?? "";
    const match = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
    return { blob: await response.blob(), name: match ? decodeURIComponent(match[1]) : null };
  }

  deleteDocument(documentId) {
    return this.request("DELETE", `/v1/documents/${encodeURIComponent(documentId)}`);
  }

  failures() {
    return this.request("GET", "/v1/failures");
  }

  retry(documentId) {
    return this.request("POST", `/v1/documents/${encodeURIComponent(documentId)}/retry`);
  }

  /** Upload one file (multipart field `file`); `onProgress(fraction)` follows the bytes sent.
   * XMLHttpRequest, not fetch: only it reports upload progress. */
  upload(file, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/v1/documents");
      xhr.setRequestHeader("Authorization", `Bearer ${this.token}`);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      });
      xhr.addEventListener("load", () => {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          // keep null
        }
        if (xhr.status >= 200 && xhr.status < 300) {
          resolve(body);
          return;
        }
        const error = body?.error ?? { code: "error", message: `${xhr.status} ${xhr.statusText}` };
        const apiError = new ApiError(xhr.status, error.code, error.message);
        if (xhr.status === 401) this.onUnauthorized(apiError);
        reject(apiError);
      });
      xhr.addEventListener("error", () =>
        reject(new ApiError(0, "network", "The upload could not reach the server")),
      );
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    });
  }

  /** Follow an SSE stream until the server ends it. Each event goes to `onEvent({id, event,
   * data})`. A dropped connection is resumed with Last-Event-ID after a backoff; an HTTP
   * error (4xx) is thrown. Resolves with the last event id seen. */
  async stream(path, { onEvent, signal, lastEventId = null } = {}) {
    let last = lastEventId;
    let failures = 0;
    while (!signal?.aborted) {
      try {
        const headers = this.headers({ Accept: "text/event-stream" });
        if (last) headers["Last-Event-ID"] = last;
        const response = await send(path, { headers, signal, cache: "no-store" });
        if (!response.ok) {
          const error = await ApiError.from(response);
          if (error.status === 401) this.onUnauthorized(error);
          throw error;
        }
        failures = 0;
        await readEventStream(response.body, (event) => {
          if (event.id) last = event.id;
          onEvent(event);
        });
        return last;
      } catch (error) {
        if (signal?.aborted) return last;
        if (error instanceof ApiError && error.status > 0 && error.status < 500) throw error;
        failures += 1;
        await sleep(Math.min(10000, 400 * 2 ** failures), signal);
      }
    }
    return last;
  }
}

/** Filters as in a search request (`{type, tag: [...]}`) as query parameters. */
export function filterParams(filters) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== null && v !== undefined && v !== "") query.append(key, String(v));
    }
  }
  return query;
}

/** Parse a text/event-stream body (the WHATWG format: `field: value` lines, events end at
 * a blank line, `:` starts a comment) and call `onEvent` with each complete event. */
export async function readEventStream(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { id: null, event: "message", data: [] };
  const dispatch = () => {
    if (event.data.length) {
      const raw = event.data.join("\n");
      let data = raw;
      try {
        data = JSON.parse(raw);
      } catch {
        // not JSON: pass the text
      }
      onEvent({ id: event.id, event: event.event, data });
    }
    event = { id: null, event: "message", data: [] };
  };
  const line = (text) => {
    if (text === "") return dispatch();
    if (text.startsWith(":")) return undefined; // comment (keep-alive ping)
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") event.data.push(value);
    else if (field === "event") event.event = value;
    else if (field === "id") event.id = value;
    return undefined;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A lone "\r" at the very end may be the first half of "\r\n": wait for more.
      if (buffer[end] === "\r" && end === buffer.length - 1) break;
      const width = buffer.startsWith("\r\n", end) ? 2 : 1;
      line(buffer.slice(0, end));
      buffer = buffer.slice(end + width);
    }
  }
  if (buffer) line(buffer.replace(/\r$/, ""));
}
