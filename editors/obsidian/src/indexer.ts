// "Index this vault": docshelf's HTTP API registers no folder (a server must not read any
// path a client names), so the plugin runs the local `docshelf add VAULT --json --progress`
// — the connector the CLI and `docshelf serve` share through their home. The first run
// registers the vault as a source; each later one syncs it (new, changed, moved and
// deleted notes). Progress comes as JSON lines on stderr, the result as one JSON envelope
// on stdout.

import { spawn as nodeSpawn } from "child_process";

import { abortError } from "./api";

/** One line of `--progress` (docshelf's ProgressEvent, with its rate and ETA). */
export interface ProgressEvent {
  phase: string;
  done: number;
  total: number | null;
  unit: string;
  item: string;
  eta_seconds?: number | null;
}

export interface IndexReport {
  source_id: string;
  counts: Record<string, number>;
  failures: { path: string; reason: string }[];
}

export function parseProgressLine(line: string): ProgressEvent | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const data = JSON.parse(line) as Partial<ProgressEvent> & { event?: unknown };
    if (data.event !== "progress" || typeof data.phase !== "string" || typeof data.done !== "number") {
      return undefined;
    }
    return {
      phase: data.phase,
      done: data.done,
      total: typeof data.total === "number" ? data.total : null,
      unit: typeof data.unit === "string" ? data.unit : "files",
      item: typeof data.item === "string" ? data.item : "",
      eta_seconds: typeof data.eta_seconds === "number" ? data.eta_seconds : null,
    };
  } catch {
    return undefined;
  }
}

const PHASES: Record<string, string> = {
  scan: "Scanning",
  parse: "Reading",
  embed: "Embedding",
  index: "Indexing",
  enrich: "Enriching",
};

function eta(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || seconds < 5) return "";
  return seconds < 90 ? `about ${Math.round(seconds)} s left` : `about ${Math.round(seconds / 60)} min left`;
}

/** `Reading 12/40 files · raft.md · about 20 s left` */
export function describeProgress(event: ProgressEvent): string {
  const phase = PHASES[event.phase] ?? event.phase;
  const count =
    event.total === null ? `${event.done} ${event.unit}` : `${event.done}/${event.total} ${event.unit}`;
  const item = event.item && event.item !== "done" ? event.item : "";
  return [`${phase} ${count}`, item, eta(event.eta_seconds)].filter(Boolean).join(" · ");
}

const COUNTED = ["added", "updated", "moved", "removed", "unchanged", "failed"];

/** `Indexed the vault: 2 added, 1 updated, 40 unchanged, 1 failed (b.txt: binary content, not text)` */
export function describeReport(report: IndexReport): string {
  const counts = COUNTED.filter((k) => (report.counts[k] ?? 0) > 0).map((k) => `${report.counts[k]} ${k}`);
  let text = `Indexed the vault: ${counts.length ? counts.join(", ") : "nothing to index"}`;
  if (report.failures.length > 0) {
    const shown = report.failures.slice(0, 3).map((f) => `${baseName(f.path)}: ${f.reason}`);
    const more = report.failures.length > 3 ? `; ${report.failures.length - 3} more` : "";
    text += ` (${shown.join("; ")}${more})`;
  }
  return text;
}

function baseName(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}

export interface IndexOptions {
  /** The docshelf executable: a name on PATH or a full path. */
  executable: string;
  /** DOCSHELF_HOME for the command (the server's home); empty: the environment's. */
  home: string;
  vaultPath: string;
  onProgress: (event: ProgressEvent) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  spawn?: typeof nodeSpawn;
}

interface Envelope {
  ok?: boolean;
  result?: IndexReport | null;
  error?: { code?: string; message?: string } | null;
}

/** Runs `docshelf add VAULT`; its report, or an error that says what went wrong. */
export function runIndex(options: IndexOptions): Promise<IndexReport> {
  const { executable, vaultPath, onProgress, signal } = options;
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), NO_COLOR: "1" };
  if (options.home.trim()) env.DOCSHELF_HOME = options.home.trim();
  const spawn = options.spawn ?? nodeSpawn;
  return new Promise<IndexReport>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const child = spawn(executable, ["add", vaultPath, "--json", "--progress"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
    let stdout = "";
    let partial = "";
    const said: string[] = []; // stderr lines that are not progress, for an error message
    const take = (line: string): void => {
      const event = parseProgressLine(line);
      if (event) onProgress(event);
      else if (line.trim()) said.push(line.trim());
    };
    // Decoded as text streams: a character cut between two chunks is kept whole.
    child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      const lines = (partial + d).split(/\r?\n/);
      partial = lines.pop() ?? "";
      lines.forEach(take);
    });
    const onAbort = (): void => {
      child.kill();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error: NodeJS.ErrnoException) => {
      signal?.removeEventListener("abort", onAbort);
      if (error.code === "ENOENT") {
        reject(
          new Error(
            `No docshelf executable at "${executable}": set its full path in Settings → docshelf (\`which docshelf\` prints it).`,
          ),
        );
      } else reject(error);
    });
    child.on("close", (code) => {
      signal?.removeEventListener("abort", onAbort);
      take(partial);
      if (signal?.aborted) return reject(abortError());
      let envelope: Envelope | undefined;
      try {
        envelope = JSON.parse(stdout) as Envelope;
      } catch {
        envelope = undefined;
      }
      if (envelope?.ok && envelope.result) return resolve(envelope.result);
      const why = envelope?.error?.message ?? (said.slice(-5).join("\n") || `it exited with status ${code}`);
      reject(new Error(`docshelf could not index the vault: ${why}`));
    });
  });
}
