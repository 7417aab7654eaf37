// @vitest-environment happy-dom
// The plugin in a fake Obsidian (test/fake-obsidian.ts) over a real vault folder, talking
// to a fake server: its commands, the search modal, opening hits, the ask modal and its
// citations, the settings tab, and indexing (with a stand-in docshelf executable).

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import type { App } from "obsidian";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import manifestJson from "../manifest.json";
import { type AnswerCitation, type Hit } from "../src/api";
import { type AskModal } from "../src/ask-modal";
import DocshelfPlugin from "../src/main";
import { SearchModal } from "../src/search-modal";
import { DocshelfSettingTab } from "../src/settings-tab";
import { fakeDocshelf } from "./fake-docshelf";
import {
  App as FakeApp,
  type Plugin as FakePlugin,
  fake,
  noticeTexts,
  resetFake,
  runCommand,
  typeInto,
} from "./fake-obsidian";
import { type Sent, fakeFetch, json, streamed } from "./responses";

const vault = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-vault-"));
const write = (rel: string, text: string): void => {
  fs.mkdirSync(path.dirname(path.join(vault, rel)), { recursive: true });
  fs.writeFileSync(path.join(vault, rel), text);
};
write(".obsidian/app.json", "{}");
write(
  "notes/raft.md",
  "# Raft\n\nIntro.\n\n## Elections\n\nA follower that hears no heartbeat.\n\n## Log\n\nEntries.\n",
);
write("papers/p.pdf", "%PDF-1.4 not really");
afterAll(() => fs.rmSync(vault, { recursive: true, force: true }));

const citation = (file: string, headings: string[] = ["Raft", "Elections"], page: number | null = null) => ({
  label: `Raft (${path.basename(file)}#1)`,
  path: file,
  title: "Raft",
  heading_path: headings,
  chunk_index: 1,
  page_start: page,
  page_end: page,
  anchor: 10,
});

const hit = (file: string, headings?: string[], page: number | null = null): Hit => ({
  chunk_id: "chunk_1",
  document_id: "doc_1",
  score: 1,
  text: "A follower that hears no heartbeat.",
  display_text: "A follower that hears no heartbeat.",
  citation: citation(file, headings, page),
});

let plugin: DocshelfPlugin;
let sent: Sent[];
let external: string[];
/** What the fake server answers. */
let server: (request: Sent) => ReturnType<typeof json>;

async function load(
  data: Record<string, unknown> = { token: "dsk_t", serverUrl: "http://h:1" },
): Promise<void> {
  resetFake();
  plugin = new DocshelfPlugin(new FakeApp(vault) as unknown as App, manifestJson);
  (plugin as unknown as FakePlugin).data = data;
  const transport = fakeFetch((request) => server(request));
  sent = transport.sent;
  plugin.fetch = transport.fetch;
  external = [];
  plugin.openExternal = (url) => external.push(url);
  await plugin.onload();
}

const fakePlugin = (): FakePlugin => plugin as unknown as FakePlugin;

beforeEach(async () => {
  server = () => json(404, { error: { code: "not_found", message: "no" } });
  await load();
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("the plugin", () => {
  it("registers its commands, a settings tab, a ribbon icon and a status bar item", () => {
    expect([...fakePlugin().commands.keys()].sort()).toEqual([
      "ask",
      "index-vault",
      "search",
      "stop-indexing",
    ]);
    expect(fakePlugin().settingTabs[0]).toBeInstanceOf(DocshelfSettingTab);
    expect(fakePlugin().ribbon.map((r) => r.title)).toEqual(["docshelf: Search"]);
    expect(fakePlugin().statusBar).toHaveLength(1);
    expect(runCommand(fakePlugin(), "stop-indexing")).toBe(false); // nothing to stop
  });

  it("loads its saved settings over the defaults", () => {
    expect(plugin.settings).toMatchObject({ serverUrl: "http://h:1", token: "dsk_t", searchLimit: 20 });
  });
});

function openSearch(): SearchModal {
  runCommand(fakePlugin(), "search");
  const modal = fake.modals.at(-1);
  expect(modal).toBeInstanceOf(SearchModal);
  return modal as unknown as SearchModal;
}

describe("search", () => {
  it("asks once the typing stops and lists title, heading path and snippet", async () => {
    server = () => json(200, { query: "q", mode: "lexical", hits: [hit(`${vault}/notes/raft.md`)] });
    const modal = openSearch();
    const first = typeInto(modal, "heart");
    const hits = await typeInto(modal, "heartbeat");
    await first;
    expect(hits).toHaveLength(1);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0].body ?? "")).toEqual({ query: "heartbeat", limit: 20 });
    const row = modal.resultContainerEl.querySelector(".suggestion-item");
    expect(row?.querySelector(".docshelf-hit-title")?.textContent).toBe("Raft");
    expect(row?.querySelector(".docshelf-trail")?.textContent).toBe("Raft › Elections");
    expect(row?.querySelector(".docshelf-snippet")?.textContent).toBe("A follower that hears no heartbeat.");
  });

  it("opens the chosen hit's note at its heading", async () => {
    server = () =>
      json(200, { query: "q", mode: "lexical", hits: [hit(`${vault}/notes/raft.md`, ["Raft", "Log"])] });
    const modal = openSearch();
    const [chosen] = await typeInto(modal, "entries");
    modal.selectSuggestion(chosen, new MouseEvent("click"));
    await vi.waitFor(() => expect(fake.opened).toHaveLength(1));
    expect(fake.opened[0]).toEqual({ path: "notes/raft.md", line: 8, cursor: 8 });
    expect(fake.modals).toHaveLength(0);
  });

  it("scrolls the reading view without touching an editor", async () => {
    fake.mode = "preview";
    await plugin.openCitation(citation(`${vault}/notes/raft.md`), "c", "d", "");
    expect(fake.opened[0]).toEqual({ path: "notes/raft.md", line: 4, cursor: undefined });
  });

  it("opens a vault PDF at its page, and anything else on the web page, saying why", async () => {
    await plugin.openCitation(citation(`${vault}/papers/p.pdf`, [], 4), "chunk_1", "doc_1", "");
    expect(fake.links).toEqual(["papers/p.pdf#page=4"]);
    await plugin.openCitation(citation("/elsewhere/notes/x.md"), "chunk_1", "doc_1", "");
    expect(external).toEqual(["http://h:1/#open/doc_1/chunk_1//10"]);
    expect(noticeTexts().at(-1)).toMatch(/not a file of this vault/);
  });

  it("shows why nothing is listed: no token, a server down, no hits", async () => {
    await load({ serverUrl: "http://h:1" });
    let modal = openSearch();
    await typeInto(modal, "raft");
    expect(modal.resultContainerEl.textContent).toMatch(/Set the server's token/);

    await load();
    plugin.fetch = () => Promise.reject(Object.assign(new Error("connect"), { code: "ECONNREFUSED" }));
    modal = openSearch();
    await typeInto(modal, "raft");
    expect(modal.resultContainerEl.textContent).toMatch(
      /Cannot reach docshelf at http:\/\/h:1: connection refused/,
    );

    await load();
    server = () => json(200, { query: "q", mode: "lexical", hits: [], notice: "Lexical only." });
    modal = openSearch();
    await typeInto(modal, "zebra");
    expect(modal.resultContainerEl.textContent).toBe("No hits for “zebra”. Lexical only.");
    await typeInto(modal, "  ");
    expect(modal.resultContainerEl.textContent).toBe("Type to search your docshelf library.");
  });

  it("keeps to this vault's source when asked to, and says when the vault is not indexed", async () => {
    await load({ token: "t", serverUrl: "http://h:1", vaultOnly: true, searchLimit: 5 });
    let sources = [{ id: "src_v", path: vault, kind: "folder" }];
    server = (request) =>
      request.url.endsWith("/v1/sources")
        ? json(200, { sources })
        : json(200, { query: "", mode: "", hits: [] });
    let modal = openSearch();
    await typeInto(modal, "raft");
    await typeInto(modal, "raft log");
    expect(sent.map((s) => s.url.replace("http://h:1", ""))).toEqual([
      "/v1/sources",
      "/v1/search",
      "/v1/search",
    ]);
    expect(JSON.parse(sent[2].body ?? "")).toEqual({
      query: "raft log",
      limit: 5,
      filters: { source: "src_v" },
    });

    sources = [{ id: "src_p", path: "/papers", kind: "folder" }];
    modal = openSearch();
    await typeInto(modal, "raft");
    expect(modal.resultContainerEl.textContent).toMatch(/This vault is not in the library at http:\/\/h:1/);
  });
});

const SOURCES: AnswerCitation[] = [
  { n: 1, chunk_id: "chunk_1", label: "Raft (raft.md#1)", citation: citation(`${vault}/notes/raft.md`) },
  { n: 2, chunk_id: "chunk_2", label: "Old (old.md#0)" },
];

function answerStream(answer: Record<string, unknown>, sentences: string[]) {
  return () =>
    streamed(200, [
      `event: sources\ndata: ${JSON.stringify({ sources: SOURCES })}\n\n`,
      ...sentences.map((t) => `event: text\ndata: ${JSON.stringify({ text: t })}\n\n`),
      `event: done\ndata: ${JSON.stringify({ question: "q", mode: "extractive", citations: SOURCES, ...answer })}\n\n`,
    ]);
}

function openAsk(): AskModal {
  runCommand(fakePlugin(), "ask");
  return fake.modals.at(-1) as unknown as AskModal;
}

describe("ask", () => {
  it("streams the answer and makes its citations links that open the cited note", async () => {
    server = answerStream({ answer: "It elects [1]. Old notes say so [2]." }, [
      "It elects [1].",
      "Old notes say so [2].",
    ]);
    const modal = openAsk();
    modal.inputEl.value = "how does raft elect?";
    modal.inputEl.form?.dispatchEvent(new Event("submit", { cancelable: true }));
    await vi.waitFor(() => expect(modal.answerEl.querySelector("h4")?.textContent).toBe("Sources"));
    expect(JSON.parse(sent[0].body ?? "")).toEqual({ question: "how does raft elect?" });
    expect(modal.answerEl.querySelector(".docshelf-answer-text")?.textContent).toBe(
      "It elects [1]. Old notes say so [2].",
    );
    expect(modal.statusEl.textContent).toBe("");
    const links = modal.answerEl.querySelectorAll<HTMLAnchorElement>(".docshelf-answer-text a.docshelf-cite");
    expect([...links].map((a) => a.textContent)).toEqual(["1", "2"]);
    links[0].click();
    expect(fake.modals).toHaveLength(0);
    await vi.waitFor(() => expect(fake.opened).toEqual([{ path: "notes/raft.md", line: 4, cursor: 4 }]));
  });

  it("opens a source without a citation on the web page, at its chunk", async () => {
    server = answerStream({ answer: "Old notes say so [2]." }, ["Old notes say so [2]."]);
    const modal = openAsk();
    await modal.ask("q");
    modal.answerEl.querySelector<HTMLAnchorElement>(".docshelf-sources li:nth-child(2) a")?.click();
    await vi.waitFor(() => expect(external).toEqual(["http://h:1/#cite/chunk_2"]));
  });

  it("shows the last answer again when Ask reopens, until the server or token changes", async () => {
    server = answerStream({ answer: "It elects [1]." }, ["It elects [1]."]);
    let modal = openAsk();
    await modal.ask("how?");
    modal.close();
    modal = openAsk();
    expect(modal.inputEl.value).toBe("how?");
    expect(modal.answerEl.textContent).toContain("It elects [1].");
    modal.close();
    plugin.settings.token = "another";
    await plugin.saveSettings();
    modal = openAsk();
    expect(modal.inputEl.value).toBe("");
    expect(modal.answerEl.textContent).toBe("");
  });

  it("says clearly when the library does not answer", async () => {
    server = answerStream({ answer: "No passage holds the question's key words.", answered: false }, []);
    const modal = openAsk();
    await modal.ask("zebra?");
    expect(modal.statusEl.textContent).toBe("Your library does not answer this question.");
    expect(modal.statusEl.classList.contains("docshelf-abstain")).toBe(true);
    expect(modal.answerEl.querySelector("h4")?.textContent).toBe("Closest passages");

    server = () =>
      streamed(200, [
        'event: sources\ndata: {"sources": []}\n\n',
        'event: done\ndata: {"question": "q", "answer": "No document matched the question.", "mode": "extractive", "citations": []}\n\n',
      ]);
    await modal.ask("zebra?");
    expect(modal.statusEl.textContent).toMatch(/no source is cited/);
  });

  it("says what went wrong", async () => {
    server = () => json(401, { error: { code: "unauthorized", message: "no" } });
    const modal = openAsk();
    await modal.ask("q");
    expect(modal.statusEl.textContent).toMatch(/refused the token/);
    expect(modal.statusEl.classList.contains("docshelf-error")).toBe(true);
  });
});

describe("settings tab", () => {
  it("shows the settings and saves each change with the plugin's data", async () => {
    const tab = fakePlugin().settingTabs[0] as unknown as DocshelfSettingTab;
    tab.display();
    const input = (name: string): HTMLInputElement => {
      const setting = [...tab.containerEl.querySelectorAll(".setting-item")].find(
        (s) => s.firstElementChild?.textContent === name,
      );
      const found = setting?.querySelector("input");
      if (!found) throw new Error(`no setting ${name}`);
      return found;
    };
    const type = (name: string, value: string): void => {
      const el = input(name);
      el.value = value;
      el.dispatchEvent(new Event("input"));
    };
    expect(input("Server URL").value).toBe("http://h:1");
    expect(input("Token").type).toBe("password");
    type("Server URL", "http://127.0.0.1:9999/");
    type("Token", " dsk_new ");
    type("Hits per search", "500");
    type("docshelf executable", "");
    type("docshelf home", "/srv/library");
    await vi.waitFor(() =>
      expect(fakePlugin().data).toMatchObject({
        serverUrl: "http://127.0.0.1:9999/",
        token: "dsk_new",
        searchLimit: 100,
        executable: "docshelf",
        home: "/srv/library",
      }),
    );
    const headings = [...tab.containerEl.querySelectorAll(".setting-item-heading")].map((h) => h.textContent);
    expect(headings).toEqual(["Search", "Indexing"]);
  });

  it("checks the server and the token on demand", async () => {
    server = (request) =>
      request.url.includes("/v1/sources")
        ? json(200, { sources: [{ id: "s", path: vault, kind: "folder" }] })
        : json(200, { documents: [] });
    await plugin.checkConnection();
    expect(noticeTexts()).toEqual(["Connected to docshelf at http://h:1. This vault is in its library."]);
  });
});

describe("index this vault", () => {
  const stand = fakeDocshelf();
  afterAll(() => stand.remove());
  const useStandIn = (mode: "ok" | "fail" | "hang"): void => {
    plugin.settings.executable = stand.executable;
    for (const [k, v] of Object.entries(stand.env(mode))) if (k.startsWith("FAKE_")) vi.stubEnv(k, v ?? "");
  };

  it("runs docshelf add on the vault's folder, shows its progress, then what it did", async () => {
    useStandIn("ok");
    server = () => json(200, { sources: [{ id: "src_v", path: vault, kind: "folder" }] });
    const report = await plugin.indexVault();
    expect(report?.counts.added).toBe(1);
    expect(stand.lastCall().argv).toEqual(["add", vault, "--json", "--progress"]);
    const progress = fake.notices[0];
    expect(progress.message).toBe("docshelf: Reading 2/2 files");
    expect(progress.hidden).toBe(true);
    expect(noticeTexts().at(-1)).toBe(
      "Indexed the vault: 1 added, 1 failed (b.txt: binary content, not text).",
    );
    expect(fakePlugin().statusBar[0].textContent).toBe("");
  });

  it("warns when the server does not list the vault afterwards", async () => {
    useStandIn("ok");
    server = () => json(200, { sources: [] });
    await plugin.indexVault();
    expect(noticeTexts().at(-1)).toMatch(/does not list this vault among your sources/);
  });

  it("says docshelf's error", async () => {
    useStandIn("fail");
    expect(await plugin.indexVault()).toBeUndefined();
    expect(noticeTexts().at(-1)).toBe("docshelf could not index the vault: No such file or folder: /v");
  });

  it("runs one at a time and stops on command", async () => {
    useStandIn("hang");
    const running = plugin.indexVault();
    await vi.waitFor(() => expect(fakePlugin().statusBar[0].textContent).toBe("docshelf: Scanning 0 files"));
    await plugin.indexVault();
    expect(noticeTexts().at(-1)).toBe("docshelf is indexing this vault already.");
    expect(runCommand(fakePlugin(), "stop-indexing")).toBe(true);
    expect(await running).toBeUndefined();
    expect(noticeTexts().at(-1)).toBe("docshelf: indexing stopped.");
  });
});
