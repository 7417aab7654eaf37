// One upload's life: the bytes sent, then the document's stages from SSE, to complete,
// failed (with the reason, retryable) or the dedup fast path. A pure state machine
// (`advance`) and a runner that drives it with the API client; the UI only renders states.

import { ApiError, type DocshelfClient, type UploadReceipt } from "./api";
import { type FollowOptions, type FollowResult, type StageEvent, followDocument } from "./sse";

export type UploadState =
  | { phase: "uploading"; name: string }
  | {
      phase: "processing";
      name: string;
      documentId: string;
      stage: string;
      progressPct: number | null;
      message: string;
      lastEventId: string | undefined;
    }
  | { phase: "complete"; name: string; documentId: string; deduplicated: boolean }
  | {
      phase: "failed";
      name: string;
      /** Undefined when the upload itself was refused: nothing on the server to retry. */
      documentId: string | undefined;
      stage: string | undefined;
      reason: string;
      lastEventId: string | undefined;
    };

export type UploadEvent =
  | { kind: "sent"; receipt: UploadReceipt }
  | { kind: "error"; reason: string }
  | { kind: "stage"; event: StageEvent }
  | { kind: "retrying" };

export const DEDUP_MESSAGE = "Already processed — linking to your library";

/** Stage names as the user reads them. */
export const STAGE_LABELS: Record<string, string> = {
  uploading: "Uploading",
  queued: "Queued",
  parsing: "Parsing",
  chunking: "Chunking",
  embedding: "Embedding",
  indexing: "Indexing",
  complete: "Complete",
  failed: "Failed",
};

export function stageLabel(stage: string): string {
  return STAGE_LABELS[stage] ?? stage.charAt(0).toUpperCase() + stage.slice(1);
}

export function initialState(name: string): UploadState {
  return { phase: "uploading", name };
}

/** The next state; an event that does not fit the current phase is an error in the caller. */
export function advance(state: UploadState, event: UploadEvent): UploadState {
  const { name } = state;
  switch (event.kind) {
    case "sent": {
      expectPhase(state, event, "uploading");
      const { receipt } = event;
      if (receipt.status === "complete") {
        // The caller already holds these bytes, processed: nothing to follow.
        return { phase: "complete", name, documentId: receipt.document_id, deduplicated: true };
      }
      return {
        phase: "processing",
        name,
        documentId: receipt.document_id,
        stage: receipt.status,
        progressPct: null,
        message: "",
        lastEventId: undefined,
      };
    }
    case "error":
      if (state.phase === "complete") throw badEvent(state, event);
      return {
        phase: "failed",
        name,
        documentId: state.phase === "uploading" ? undefined : state.documentId,
        stage: state.phase === "processing" ? state.stage : undefined,
        reason: event.reason,
        lastEventId: state.phase === "uploading" ? undefined : state.lastEventId,
      };
    case "stage": {
      if (state.phase !== "processing") throw badEvent(state, event);
      const { stage, progressPct, message, id } = event.event;
      const lastEventId = id ?? state.lastEventId;
      if (stage === "complete") {
        return { phase: "complete", name, documentId: state.documentId, deduplicated: false };
      }
      if (stage === "failed") {
        return {
          phase: "failed",
          name,
          documentId: state.documentId,
          stage: state.stage,
          reason: message || "the server gave no reason",
          lastEventId,
        };
      }
      return { ...state, stage, progressPct, message, lastEventId };
    }
    case "retrying":
      if (state.phase !== "failed") throw badEvent(state, event);
      if (state.documentId === undefined) return { phase: "uploading", name };
      return {
        phase: "processing",
        name,
        documentId: state.documentId,
        stage: "queued",
        progressPct: null,
        message: "",
        lastEventId: state.lastEventId,
      };
  }
}

function expectPhase(state: UploadState, event: UploadEvent, phase: UploadState["phase"]): void {
  if (state.phase !== phase) throw badEvent(state, event);
}

function badEvent(state: UploadState, event: UploadEvent): Error {
  return new Error(`upload of ${state.name}: no "${event.kind}" in phase "${state.phase}"`);
}

/** One line for a notification or the status bar. */
export function describe(state: UploadState): string {
  switch (state.phase) {
    case "uploading":
      return `${state.name}: Uploading`;
    case "processing": {
      const pct = state.progressPct === null ? "" : ` ${Math.round(state.progressPct)}%`;
      const detail = state.message ? ` — ${state.message}` : "";
      return `${state.name}: ${stageLabel(state.stage)}${pct}${detail}`;
    }
    case "complete":
      return state.deduplicated ? `${state.name}: ${DEDUP_MESSAGE}` : `${state.name}: Complete`;
    case "failed": {
      const where = state.stage ? ` while ${stageLabel(state.stage).toLowerCase()}` : "";
      return `${state.name}: Failed${where} — ${state.reason}`;
    }
  }
}

/** Whether Retry can help: the document exists on the server, or the bytes can be re-sent. */
export function canRetry(state: UploadState): boolean {
  return state.phase === "failed";
}

export interface RunOptions {
  onState: (state: UploadState) => void;
  signal?: AbortSignal;
  follow?: Omit<FollowOptions, "onEvent" | "lastEventId" | "signal">;
}

/** Where a file's bytes come from (read once per attempt). */
export type ReadBytes = () => Promise<Uint8Array>;

/** Drives one upload from `state` (uploading, or processing after a retry) to its end. */
async function drive(
  client: DocshelfClient,
  state: UploadState,
  read: ReadBytes,
  options: RunOptions,
): Promise<UploadState> {
  const set = (next: UploadState): UploadState => {
    state = next;
    options.onState(state);
    return state;
  };
  if (state.phase === "uploading") {
    try {
      const receipt = await client.upload(state.name, await read(), options.signal);
      set(advance(state, { kind: "sent", receipt }));
    } catch (error) {
      if (options.signal?.aborted) throw error;
      return set(advance(state, { kind: "error", reason: errorText(error) }));
    }
  }
  if (state.phase !== "processing") return state;
  let result: FollowResult;
  try {
    result = await followDocument(client, state.documentId, {
      ...options.follow,
      lastEventId: state.lastEventId,
      signal: options.signal,
      onEvent: (event) => set(advance(state, { kind: "stage", event })),
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return set(advance(state, { kind: "error", reason: errorText(error) }));
  }
  if (state.phase === "processing") {
    // Nothing left to stream (resumed after the last event): the record's status ends it.
    const { stage, message, lastEventId: id } = result;
    set(advance(state, { kind: "stage", event: { id, stage, progressPct: null, message } }));
  }
  return state;
}

export function runUpload(
  client: DocshelfClient,
  name: string,
  read: ReadBytes,
  options: RunOptions,
): Promise<UploadState> {
  const state = initialState(name);
  options.onState(state);
  return drive(client, state, read, options);
}

/** Retry a failed upload: re-queue the document on the server (or re-send refused bytes). */
export async function retryUpload(
  client: DocshelfClient,
  failed: UploadState,
  read: ReadBytes,
  options: RunOptions,
): Promise<UploadState> {
  if (failed.phase !== "failed") throw new Error(`${failed.name} has not failed`);
  if (failed.documentId !== undefined) {
    try {
      await client.retry(failed.documentId);
    } catch (error) {
      // 409: the job has not failed (it was the progress stream that broke): follow it again.
      if (!(error instanceof ApiError && error.status === 409)) {
        const refused = { ...failed, reason: errorText(error) };
        options.onState(refused);
        return refused;
      }
    }
  }
  const state = advance(failed, { kind: "retrying" });
  options.onState(state);
  return drive(client, state, read, options);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
