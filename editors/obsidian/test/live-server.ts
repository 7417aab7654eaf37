// A real `docshelf serve` for tests: its own home in a temporary folder, a free loopback
// port, lexical search only (DOCSHELF_EMBEDDER=none), no LLM, one in-process worker. The
// executable is the repository's `.venv/bin/docshelf` (`make install`), or DOCSHELF_BIN.
// Without it the tests skip and say why — except under CI=true, where that fails.
// (Adapted from editors/vscode/test/live-server.ts; the two packages share no code.)

import { execFile, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

// From the file's own path (a string): under happy-dom the global URL is not Node's.
export const DOCSHELF_BIN =
  process.env.DOCSHELF_BIN ??
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../.venv/bin/docshelf");

/** Why the live tests cannot run here, or undefined when they can. */
export function missingServer(): string | undefined {
  if (fs.existsSync(DOCSHELF_BIN)) return undefined;
  const why = `no docshelf executable at ${DOCSHELF_BIN} (run \`make install\` at the repository root, or set DOCSHELF_BIN)`;
  if (process.env.CI === "true")
    throw new Error(`CI=true: the live-server tests must run, but there is ${why}`);
  return why;
}

export interface LiveServer {
  baseUrl: string;
  home: string;
  /** What the server runs with: the same for a `docshelf` command on its library. */
  env: NodeJS.ProcessEnv;
  /** The local admin's token, printed by the first `serve` on a fresh home. */
  adminToken: string;
  /** Indexes a folder as the admin (`docshelf add DIR`): documents with real paths. */
  addFolder(dir: string): Promise<void>;
  /** A new user's bearer token (`docshelf users create NAME`). */
  createUser(name: string): Promise<string>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function healthy(baseUrl: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = http.get(`${baseUrl}/healthz`, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on("error", () => resolve(false));
  });
}

async function waitForHealth(baseUrl: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`docshelf serve exited (${child.exitCode}):\n${log()}`);
    if (await healthy(baseUrl)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`docshelf serve did not answer /healthz in 30 s:\n${log()}`);
}

export async function startServer(): Promise<LiveServer> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-obsidian-"));
  const env = {
    ...process.env,
    DOCSHELF_HOME: home,
    DOCSHELF_EMBEDDER: "none",
    DOCSHELF_LLM_URL: "",
    NO_COLOR: "1",
    PYTHONUNBUFFERED: "1", // the admin token is read from stdout
  };
  const port = await freePort();
  const child = spawn(
    DOCSHELF_BIN,
    ["serve", "--host", "127.0.0.1", "--port", String(port), "--workers", "1"],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(baseUrl, child, () => output);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  const admin = /keep it\):\s*(\S+)/.exec(output);
  if (!admin) {
    child.kill("SIGKILL");
    throw new Error(`docshelf serve printed no admin token:\n${output}`);
  }
  return {
    baseUrl,
    home,
    env,
    adminToken: admin[1],
    async addFolder(dir: string): Promise<void> {
      await run(DOCSHELF_BIN, ["add", dir, "--json"], { env });
    },
    async createUser(name: string): Promise<string> {
      const { stdout } = await run(DOCSHELF_BIN, ["users", "create", name, "--json"], { env });
      return (JSON.parse(stdout) as { result: { token: string } }).result.token;
    },
    async stop(): Promise<void> {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
