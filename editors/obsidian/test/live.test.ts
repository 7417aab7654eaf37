// @vitest-environment happy-dom
// The plugin against a real `docshelf serve` (lexical only, loopback), through its own
// transport: a vault made here is indexed by the plugin's command (the real `docshelf add`
// on the server's home), a search finds a note and the hit opens the right file at the right
// heading in the fake workspace, and an answer's citations resolve to vault files.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import type { App } from "obsidian";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

import manifestJson from "../manifest.json";
import { type Hit } from "../src/api";
import { type AskModal } from "../src/ask-modal";
import DocshelfPlugin from "../src/main";
import { type SearchModal } from "../src/search-modal";
import { resolveCitation } from "../src/vault-path";
import {
  App as FakeApp,
  type Plugin as FakePlugin,
  fake,
  noticeTexts,
  resetFake,
  runCommand,
  typeInto,
} from "./fake-obsidian";
import { DOCSHELF_BIN, type LiveServer, missingServer, startServer } from "./live-server";

const skip = missingServer();
if (skip) console.warn(`SKIPPED live-server tests: ${skip}`);

const RAFT = [
  "---",
  "title: Raft consensus",
  "tags: [consensus]",
  "---",
  "# Raft consensus",
  "",
  "Raft keeps a replicated log consistent across servers.",
  "",
  "## Leader election",
  "",
  "A follower that hears no heartbeat within its election timeout becomes a candidate and asks for votes.",
  "",
  "## Log replication",
  "",
  "The leader appends client entries and replicates them to its followers.",
  "",
].join("\n");

/** The 0-based line of `text` in `note`. */
const lineOf = (note: string, text: string): number => note.split("\n").indexOf(text);

describe.skipIf(skip !== undefined)("against a real docshelf serve", () => {
  let server: LiveServer;
  let vault: string;
  let outside: string;
  let plugin: DocshelfPlugin;
  let external: string[];
  const write = (rel: string, text: string): void => {
    fs.mkdirSync(path.dirname(path.join(vault, rel)), { recursive: true });
    fs.writeFileSync(path.join(vault, rel), text);
  };

  beforeAll(async () => {
    server = await startServer();
    vault = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-live-vault-"));
    outside = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-live-papers-"));
    write(".obsidian/app.json", "{}");
    write(".obsidian/snippets/readme.md", "# Not a note\n\nObsidian's own files: never indexed.\n");
    write("notes/raft.md", RAFT);
    write("daily/2026-01-05.md", "# Monday\n\nRead about the quorum of a cluster.\n");
    write("Top level.md", "# Top level\n\n## Wombats\n\nA wombat note at the vault's root.\n");
    fs.writeFileSync(
      path.join(outside, "outside.md"),
      "# Marsupials\n\nThe quokka lives outside the vault.\n",
    );
    await server.addFolder(outside);
  });

  afterAll(async () => {
    await server?.stop();
    for (const dir of [vault, outside]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    resetFake();
    // What the server's library runs with, for the `docshelf add` the plugin starts.
    vi.stubEnv("DOCSHELF_EMBEDDER", "none");
    vi.stubEnv("DOCSHELF_LLM_URL", "");
    plugin = new DocshelfPlugin(new FakeApp(vault) as unknown as App, manifestJson);
    (plugin as unknown as FakePlugin).data = {
      serverUrl: server.baseUrl,
      token: server.adminToken,
      executable: DOCSHELF_BIN,
      home: server.home,
    };
    external = [];
    plugin.openExternal = (url) => external.push(url);
    await plugin.onload();
  });

  async function search(query: string): Promise<{ modal: SearchModal; hits: Hit[] }> {
    runCommand(plugin as unknown as FakePlugin, "search");
    const modal = fake.modals.at(-1) as unknown as SearchModal;
    return { modal, hits: await typeInto(modal, query) };
  }

  it("indexes the vault with the plugin's command: the server lists it, .obsidian left out", async () => {
    const report = await plugin.indexVault();
    expect(report?.counts).toMatchObject({ added: 3, failed: 0 });
    expect(noticeTexts().at(-1)).toBe("Indexed the vault: 3 added.");
    const sources = await plugin.client().sources();
    expect(sources.map((s) => s.path)).toContain(fs.realpathSync(vault));
    expect(fake.notices[0].message).toMatch(/^docshelf: (Scanning|Reading|Indexing|Enriching)/);
  });

  it("finds a note and opens it at the cited heading", async () => {
    const { modal, hits } = await search("heartbeat election timeout");
    expect(hits.length).toBeGreaterThan(0);
    const [top] = hits;
    expect(top.citation.path).toBe(path.join(fs.realpathSync(vault), "notes", "raft.md"));
    expect(top.citation.heading_path).toEqual(["Raft consensus", "Leader election"]);
    const row = modal.resultContainerEl.querySelector(".suggestion-item");
    expect(row?.querySelector(".docshelf-hit-title")?.textContent).toBe("Raft consensus");
    expect(row?.querySelector(".docshelf-trail")?.textContent).toBe("Raft consensus › Leader election");
    modal.selectSuggestion(top, new MouseEvent("click"));
    const line = lineOf(RAFT, "## Leader election");
    await vi.waitFor(() => expect(fake.opened).toEqual([{ path: "notes/raft.md", line, cursor: line }]));
  });

  it("takes docshelf's filter words in the query", async () => {
    const tagged = (await search("tag:consensus leader")).hits;
    expect(new Set(tagged.map((h) => h.citation.title))).toEqual(new Set(["Raft consensus"]));
    expect((await search("tag:consensus wombat")).hits).toEqual([]);
  });

  it("opens a note at the vault's root, its name with a space", async () => {
    const { modal, hits } = await search("wombat");
    modal.selectSuggestion(hits[0], new MouseEvent("click"));
    await vi.waitFor(() => expect(fake.opened).toEqual([{ path: "Top level.md", line: 2, cursor: 2 }]));
  });

  it("asks, and every citation of the answer opens a vault file", async () => {
    runCommand(plugin as unknown as FakePlugin, "ask");
    const modal = fake.modals.at(-1) as unknown as AskModal;
    await modal.ask("What does a follower do when it hears no heartbeat?");
    expect(modal.statusEl.textContent).toBe("");
    const answer = plugin.lastAsk?.answer;
    expect(answer?.citations.length).toBeGreaterThan(0);
    for (const source of answer?.citations ?? []) {
      expect(source.citation).toBeDefined();
      const target = resolveCitation(
        source.citation!,
        source.chunk_id,
        undefined,
        server.baseUrl,
        plugin.vaultView(),
      );
      expect(target.kind).toBe("note");
    }
    const link = modal.answerEl.querySelector<HTMLAnchorElement>(".docshelf-answer-text a.docshelf-cite");
    expect(link).not.toBeNull();
    link?.click();
    const line = lineOf(RAFT, "## Leader election");
    await vi.waitFor(() => expect(fake.opened).toEqual([{ path: "notes/raft.md", line, cursor: line }]));
  });

  it("opens a hit from outside the vault on the web page; 'This vault only' leaves it out", async () => {
    const { modal, hits } = await search("quokka");
    expect(hits.map((h) => h.citation.title)).toEqual(["Marsupials"]);
    modal.selectSuggestion(hits[0], new MouseEvent("click"));
    await vi.waitFor(() => expect(external).toHaveLength(1));
    expect(external[0].startsWith(`${server.baseUrl}/#open/${hits[0].document_id}/`)).toBe(true);
    expect(noticeTexts().at(-1)).toMatch(/not a file of this vault/);

    plugin.settings.vaultOnly = true;
    const inVault = await search("quokka");
    expect(inVault.hits).toEqual([]);
    expect(inVault.modal.resultContainerEl.textContent).toMatch(/^No hits for “quokka”/);
    expect((await search("quorum")).hits.map((h) => h.citation.title)).toEqual(["Monday"]);
  });

  it("indexes again after changes: an edited note is found at its new heading, a deleted one is gone", async () => {
    const edited = `${RAFT}\n## Snapshots\n\nCompaction by snapshotting keeps the log short.\n`;
    write("notes/raft.md", edited);
    fs.rmSync(path.join(vault, "daily/2026-01-05.md"));
    const report = await plugin.indexVault();
    expect(report?.counts).toMatchObject({ added: 0, updated: 1, removed: 1 });
    const { modal, hits } = await search("snapshotting compaction");
    expect(hits[0].citation.heading_path).toEqual(["Raft consensus", "Snapshots"]);
    modal.selectSuggestion(hits[0], new MouseEvent("click"));
    const line = lineOf(edited, "## Snapshots");
    await vi.waitFor(() => expect(fake.opened).toEqual([{ path: "notes/raft.md", line, cursor: line }]));
    expect((await search("quorum")).hits).toEqual([]);
  });

  it("says so when the token's user does not have the vault", async () => {
    plugin.settings.token = await server.createUser("bob");
    await plugin.indexVault();
    expect(noticeTexts().at(-1)).toMatch(/does not list this vault among your sources/);
  });
});
