// "docshelf: Add this file" / "Add folder…": uploads with live stages in a progress
// notification and a status-bar item; the dedup fast path said so; failures with their
// reason and a Retry action. The work itself is upload.ts's state machine.

import * as vscode from "vscode";

import { type DocshelfClient } from "./api";
import { fileTypeOf } from "./location";
import { type Session } from "./session";
import {
  DEDUP_MESSAGE,
  type ReadBytes,
  type RunOptions,
  type UploadState,
  describe,
  errorText,
  retryUpload,
  runUpload,
} from "./upload";

export const RETRY = "Retry";
/** Uploads at once from a folder: enough to keep the server busy, not to flood it. */
const PARALLEL = 2;

export interface FileToAdd {
  name: string;
  uri: vscode.Uri;
}

interface Job {
  file: FileToAdd;
  read: ReadBytes;
  start: (options: RunOptions) => Promise<UploadState>;
}

function stopped(name: string, reason: string): UploadState {
  return { phase: "failed", name, documentId: undefined, stage: undefined, reason, lastEventId: undefined };
}

export interface BatchSummary {
  complete: number;
  deduplicated: number;
  failed: UploadState[];
  skipped: number;
}

function baseName(uri: vscode.Uri): string {
  const parts = uri.path.split("/");
  return parts[parts.length - 1] || uri.path;
}

export function summarize(states: readonly UploadState[], skipped = 0): BatchSummary {
  return {
    complete: states.filter((s) => s.phase === "complete" && !s.deduplicated).length,
    deduplicated: states.filter((s) => s.phase === "complete" && s.deduplicated).length,
    failed: states.filter((s) => s.phase === "failed"),
    skipped,
  };
}

export function summaryText(summary: BatchSummary, total: number): string {
  const parts = [`${summary.complete} complete`];
  if (summary.deduplicated) parts.push(`${summary.deduplicated} already processed (linked)`);
  if (summary.failed.length) parts.push(`${summary.failed.length} failed`);
  if (summary.skipped) parts.push(`${summary.skipped} skipped (not a type docshelf reads)`);
  return `docshelf: ${total} file${total === 1 ? "" : "s"} — ${parts.join(", ")}`;
}

export class Uploads {
  private readonly status: vscode.StatusBarItem;

  constructor(
    private readonly session: Session,
    private readonly onFinished: () => void = () => undefined,
  ) {
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
    this.status.name = "docshelf uploads";
    this.status.command = "docshelf.library.focus";
  }

  /** The explorer passes (clicked, selected); the palette nothing: the active editor's file. */
  async addFiles(clicked?: vscode.Uri, selected?: vscode.Uri[]): Promise<BatchSummary | undefined> {
    const uris = selected?.length ? selected : clicked ? [clicked] : [];
    if (uris.length === 0) {
      const active = vscode.window.activeTextEditor?.document.uri;
      if (!active || active.scheme === "untitled") {
        await vscode.window.showErrorMessage(
          "docshelf: no file to add — open one, or pick it in the explorer (right-click → docshelf: Add this file)",
        );
        return undefined;
      }
      uris.push(active);
    }
    return this.add(uris.map((uri) => ({ name: baseName(uri), uri })));
  }

  async addFolder(folder?: vscode.Uri): Promise<BatchSummary | undefined> {
    let root = folder;
    if (!root) {
      const picked = await vscode.window.showOpenDialog({
        canSelectFolders: true,
        canSelectFiles: false,
        canSelectMany: false,
        openLabel: "Add to docshelf",
      });
      if (!picked?.length) return undefined;
      root = picked[0];
    }
    const exclude = this.session.setting<string>("upload.exclude", "**/{.git,.obsidian,node_modules}/**");
    const found = await vscode.workspace.findFiles(new vscode.RelativePattern(root, "**/*"), exclude || null);
    const files = found.filter((uri) => fileTypeOf(uri.path) !== undefined);
    const skipped = found.length - files.length;
    if (files.length === 0) {
      await vscode.window.showWarningMessage(
        `docshelf: ${baseName(root)} has no file docshelf reads (Markdown, text, reStructuredText, HTML, PDF, Word)`,
      );
      return summarize([], skipped);
    }
    files.sort((a, b) => a.path.localeCompare(b.path));
    return this.add(
      files.map((uri) => ({ name: baseName(uri), uri })),
      skipped,
    );
  }

  /** Uploads each file and follows it to its end; then says how it went. */
  async add(files: readonly FileToAdd[], skipped = 0): Promise<BatchSummary | undefined> {
    let client: DocshelfClient;
    try {
      client = await this.session.client();
    } catch (error) {
      await this.session.report(error);
      return undefined;
    }
    const jobs = files.map((file) => {
      const read: ReadBytes = async () => vscode.workspace.fs.readFile(file.uri);
      return { file, read, start: (options: RunOptions) => runUpload(client, file.name, read, options) };
    });
    return this.finish(client, jobs, await this.run(jobs), skipped);
  }

  /** Runs the jobs, PARALLEL at a time; the states come back in the jobs' order. */
  private async run(jobs: readonly Job[]): Promise<UploadState[]> {
    const total = jobs.length;
    const title = total === 1 ? `docshelf: adding ${jobs[0].file.name}` : `docshelf: adding ${total} files`;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, cancel) => {
        const abort = new AbortController();
        const subscription = cancel.onCancellationRequested(() => abort.abort());
        const results: (UploadState | undefined)[] = new Array<UploadState | undefined>(total);
        let done = 0;
        let next = 0;
        const show = (state: UploadState, finished: boolean): void => {
          const prefix = total === 1 ? "" : `${done}/${total} · `;
          progress.report({
            message: prefix + describe(state),
            increment: finished ? 100 / total : undefined,
          });
          this.showStatus(state);
        };
        const worker = async (): Promise<void> => {
          while (next < total && !abort.signal.aborted) {
            const index = next++;
            const job = jobs[index];
            const final = await job
              .start({ signal: abort.signal, onState: (state) => show(state, false) })
              .catch((error: unknown) =>
                stopped(job.file.name, abort.signal.aborted ? "cancelled" : errorText(error)),
              );
            results[index] = final;
            done += 1;
            show(final, true);
          }
        };
        try {
          await Promise.all(Array.from({ length: Math.min(PARALLEL, total) }, worker));
        } finally {
          subscription.dispose();
        }
        return results.map((r, i) => r ?? stopped(jobs[i].file.name, "cancelled"));
      },
    );
  }

  private showStatus(state: UploadState): void {
    const icon =
      state.phase === "failed" ? "$(error)" : state.phase === "complete" ? "$(check)" : "$(sync~spin)";
    this.status.text = `${icon} ${describe(state)}`.slice(0, 80);
    this.status.tooltip = describe(state);
    this.status.show();
  }

  /** Says how the batch went; failures come with Retry, which runs them again. */
  private async finish(
    client: DocshelfClient,
    jobs: readonly Job[],
    states: readonly UploadState[],
    skipped: number,
  ): Promise<BatchSummary> {
    this.onFinished();
    const summary = summarize(states, skipped);
    const total = states.length + skipped;
    if (summary.failed.length === 0) {
      const only = states.length === 1 && skipped === 0 ? states[0] : undefined;
      const text =
        only?.phase === "complete"
          ? only.deduplicated
            ? `docshelf: ${only.name} — ${DEDUP_MESSAGE}`
            : `docshelf: ${only.name} added`
          : summaryText(summary, total);
      void vscode.window.showInformationMessage(text);
      return summary;
    }
    const reasons = summary.failed.map((s) => describe(s)).join("; ");
    const text = total === 1 ? `docshelf: ${reasons}` : `${summaryText(summary, total)}. ${reasons}`;
    const chosen = await vscode.window.showErrorMessage(text, RETRY);
    if (chosen !== RETRY) return summary;
    const retried: Job[] = [];
    states.forEach((state, i) => {
      if (state.phase !== "failed") return;
      const { file, read } = jobs[i];
      retried.push({ file, read, start: (options) => retryUpload(client, state, read, options) });
    });
    return this.finish(client, retried, await this.run(retried), 0);
  }

  dispose(): void {
    this.status.dispose();
  }
}
