// A stand-in for the `docshelf` executable, for tests of the indexing command without a
// real one: a Node script that writes what `docshelf add --json --progress` writes, as
// FAKE_DOCSHELF says (ok, fail, crash, hang), and records how it was called.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const SCRIPT = String.raw`#!/usr/bin/env node
const fs = require("fs");
fs.writeFileSync(process.env.FAKE_DOCSHELF_LOG, JSON.stringify({ argv: process.argv.slice(2), home: process.env.DOCSHELF_HOME ?? null }));
const mode = process.env.FAKE_DOCSHELF;
const event = (phase, done, total, item) =>
  JSON.stringify({ event: "progress", phase, done, total, unit: "files", item, eta_seconds: null });
if (mode === "ok") {
  process.stderr.write(event("scan", 2, 2, "2 to index") + "\n" + event("parse", 1, 2, "raft.md") + "\n");
  process.stderr.write("a warning line\n");
  process.stderr.write(event("parse", 2, 2, "done")); // the last line, without its newline
  process.stdout.write(JSON.stringify({ ok: true, command: "add", result: {
    source_id: "src_v", counts: { added: 1, updated: 0, unchanged: 0, moved: 0, removed: 0, failed: 1 },
    failures: [{ path: "/v/b.txt", reason: "binary content, not text" }] }, error: null }) + "\n");
} else if (mode === "fail") {
  process.stdout.write(JSON.stringify({ ok: false, result: null, error: { code: "not_found", message: "No such file or folder: /v" } }));
  process.exit(1);
} else if (mode === "crash") {
  process.stderr.write("Traceback (most recent call last):\nRuntimeError: the store is locked\n");
  process.exit(2);
} else if (mode === "hang") {
  process.stderr.write(event("scan", 0, null, "") + "\n");
  setInterval(() => {}, 1000);
}
`;

export interface FakeDocshelf {
  executable: string;
  /** How the last run was called: its arguments and DOCSHELF_HOME. */
  lastCall(): { argv: string[]; home: string | null };
  /** The environment that makes it behave so. */
  env(mode: "ok" | "fail" | "crash" | "hang"): NodeJS.ProcessEnv;
  remove(): void;
}

export function fakeDocshelf(): FakeDocshelf {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fake-docshelf-"));
  const executable = path.join(dir, "docshelf");
  const log = path.join(dir, "call.json");
  fs.writeFileSync(executable, SCRIPT, { mode: 0o755 });
  return {
    executable,
    lastCall: () => JSON.parse(fs.readFileSync(log, "utf8")) as { argv: string[]; home: string | null },
    env: (mode) => ({ ...process.env, FAKE_DOCSHELF: mode, FAKE_DOCSHELF_LOG: log }),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
