// The commands as VS Code would run them — through the fake `vscode` module — against a
// real `docshelf serve`: sign-in and SecretStorage, uploads with Retry, search and ask
// opening the cited line, the Library view.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type * as vscodeTypes from "vscode";

import manifest from "../package.json";
import { AskPanel } from "../src/ask-ui";
import { activate } from "../src/extension";
import { FAILED_CONTEXT, GROUP_CONTEXT, LibraryProvider } from "../src/library";
import { type LibraryNode } from "../src/library-tree";
import { NotSignedIn } from "../src/messages";
import { DEBOUNCE_MS, type HitItem, searchCommand } from "../src/search-ui";
import { SIGNED_IN_CONTEXT, Session } from "../src/session";
import { TOKEN_KEY_PREFIX } from "../src/tokens";
import { DEDUP_MESSAGE } from "../src/upload";
import { RETRY, Uploads } from "../src/uploads-ui";
import { FakeSecrets, Uri, fake, resetFake } from "./fake-vscode";
import { encryptedPdf, leasesPdf } from "./fixtures";
import { type LiveServer, freePort, missingServer, startServer } from "./live-server";

const skip = missingServer();
if (skip) console.warn(`SKIPPED extension tests against a live server: ${skip}`);

// Sections long enough to be snippets of their own; "## Elections" is on line 8 (0-based).
const FILLER = (word: string) => Array.from({ length: 120 }, (_, i) => `${word}${i % 7}`).join(" ");
const RAFT = [
  "# Raft",
  "",
  `Consensus for a replicated log. ${FILLER("log")}`,
  "",
  "## Setup",
  "",
  `Three nodes in a cluster. ${FILLER("node")}`,
  "",
  "## Elections",
  "",
  `A follower that hears no heartbeat becomes a candidate and asks for votes. ${FILLER("vote")}`,
  "",
].join("\n");
const BAD_UTF8 = Buffer.concat([
  Buffer.from("# Broken\n\nNot UTF-8: "),
  Buffer.from([0xff, 0xfe]),
  Buffer.from("\n"),
]);

async function until<T>(probe: () => T | undefined, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function session(secrets: FakeSecrets): Session {
  return new Session(secrets as unknown as vscodeTypes.SecretStorage);
}

describe.skipIf(skip !== undefined)("the extension against a real docshelf serve", () => {
  let server: LiveServer;
  let token: string;
  let notes: string;
  let secrets: FakeSecrets;

  beforeAll(async () => {
    server = await startServer();
    token = await server.createUser("carol");
    notes = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-notes-"));
    fs.writeFileSync(path.join(notes, "raft.md"), RAFT);
    await server.addFolder(notes); // the admin's folder source: hits carry real paths
  });

  afterAll(async () => {
    await server?.stop();
    if (notes) fs.rmSync(notes, { recursive: true, force: true });
  });

  beforeEach(() => {
    resetFake();
    fake.settings["docshelf.serverUrl"] = server.baseUrl;
    secrets = new FakeSecrets();
  });

  const signedIn = async (as = token): Promise<Session> => {
    await secrets.store(TOKEN_KEY_PREFIX + server.baseUrl, as);
    return session(secrets);
  };

  describe("connect", () => {
    it("signs in: checks the token, keeps it in SecretStorage under the server's URL", async () => {
      fake.inputs.push(`  ${token} `);
      expect(await session(secrets).signIn()).toBe(true);
      expect(secrets.values.get(TOKEN_KEY_PREFIX + server.baseUrl)).toBe(token);
      expect(fake.contexts[SIGNED_IN_CONTEXT]).toBe(true);
      expect(fake.messages.at(-1)?.text).toBe(`docshelf: signed in to ${server.baseUrl}`);
      // The token went nowhere else: not in the settings.
      expect(JSON.stringify(fake.settings)).not.toContain(token);
    });

    it("keeps no refused token, and says so with a Sign in action", async () => {
      fake.inputs.push("dsk_wrong");
      expect(await session(secrets).signIn()).toBe(false);
      expect(secrets.values.size).toBe(0);
      expect(fake.messages.at(-1)).toMatchObject({ level: "error", items: ["Sign in"] });
      expect(fake.messages.at(-1)?.text).toMatch(/refused the token/);
    });

    it("says when the server cannot be reached, naming the setting", async () => {
      fake.settings["docshelf.serverUrl"] = `http://127.0.0.1:${await freePort()}/`;
      fake.inputs.push(token);
      expect(await session(secrets).signIn()).toBe(false);
      expect(fake.messages.at(-1)?.text).toMatch(
        /cannot reach http:\/\/127\.0\.0\.1:\d+ \(connection refused\).*docshelf\.serverUrl/,
      );
    });

    it("needs a token per server; signing out deletes it from SecretStorage", async () => {
      const s = await signedIn();
      await expect(s.client()).resolves.toBeDefined();
      fake.settings["docshelf.serverUrl"] = "http://other.example:8750";
      await expect(s.client()).rejects.toBeInstanceOf(NotSignedIn);
      fake.settings["docshelf.serverUrl"] = server.baseUrl;
      await s.signOut();
      expect(secrets.calls.at(-2)).toBe(`delete ${TOKEN_KEY_PREFIX}${server.baseUrl}`);
      await expect(s.client()).rejects.toBeInstanceOf(NotSignedIn);
      expect(fake.contexts[SIGNED_IN_CONTEXT]).toBe(false);
    });

    it("refuses a server URL that is not http(s)", () => {
      fake.settings["docshelf.serverUrl"] = "file:///etc";
      expect(() => session(secrets).baseUrl()).toThrow(/must start with http/);
    });
  });

  describe("upload", () => {
    it("adds a folder: live stages in the notification and status bar; a failure offers Retry", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-up-"));
      fs.writeFileSync(path.join(dir, "good.md"), `# Good\n\nFresh words ${Date.now()}.\n`);
      fs.writeFileSync(path.join(dir, "broken.md"), BAD_UTF8);
      fs.writeFileSync(path.join(dir, "picture.png"), Buffer.from([1, 2, 3]));
      fs.mkdirSync(path.join(dir, ".git"));
      fs.writeFileSync(path.join(dir, ".git", "HEAD.md"), "# not mine\n");
      let retries = 0;
      fake.choose = (shown) => (shown.items.includes(RETRY) && retries++ === 0 ? RETRY : undefined);
      let refreshed = 0;
      const uploads = new Uploads(await signedIn(), () => (refreshed += 1));
      const summary = await uploads.addFolder(Uri.file(dir) as unknown as vscodeTypes.Uri);
      fs.rmSync(dir, { recursive: true, force: true });

      const errors = fake.messages.filter((m) => m.level === "error");
      expect(errors).toHaveLength(2); // the first time, and after the retry failed again
      expect(errors[0].text).toMatch(/3 files — 1 complete, 1 failed, 1 skipped/);
      expect(errors[0].text).toMatch(/broken\.md: Failed while \w+ — .*invalid UTF-8/);
      expect(errors[0].items).toEqual([RETRY]);
      expect(errors[1].text).toMatch(/^docshelf: broken\.md: Failed/);
      expect(summary?.failed).toHaveLength(1);
      expect(refreshed).toBe(2);
      expect(fake.progress.some((p) => /good\.md: (Queued|Parsing|Chunking|Indexing)/.test(p))).toBe(true);
      expect(fake.progress.some((p) => /^\d\/2 · good\.md: Complete$/.test(p))).toBe(true);
      expect(fake.statusTexts.some((t) => t.startsWith("$(sync~spin) "))).toBe(true);
      expect(fake.statusTexts.at(-1)).toMatch(/^\$\(error\) broken\.md: Failed/);
    });

    it("adds the active file; the same bytes again take the dedup fast path", async () => {
      const file = path.join(notes, `again-${Date.now()}.md`);
      fs.writeFileSync(file, `# Again\n\n${Date.now()}\n`);
      const uploads = new Uploads(await signedIn());
      await uploads.addFiles(Uri.file(file) as unknown as vscodeTypes.Uri);
      expect(fake.messages.at(-1)?.text).toBe(`docshelf: ${path.basename(file)} added`);
      await uploads.addFiles(undefined, [Uri.file(file) as unknown as vscodeTypes.Uri]);
      expect(fake.messages.at(-1)).toMatchObject({
        level: "info",
        text: `docshelf: ${path.basename(file)} — ${DEDUP_MESSAGE}`,
      });
      fs.rmSync(file);
    });

    it("without a token, offers Sign in instead of uploading", async () => {
      const uploads = new Uploads(session(secrets));
      expect(
        await uploads.addFiles(Uri.file(path.join(notes, "raft.md")) as unknown as vscodeTypes.Uri),
      ).toBeUndefined();
      expect(fake.messages.at(-1)).toMatchObject({ level: "error", items: ["Sign in"] });
      expect(fake.messages.at(-1)?.text).toMatch(/Not signed in/);
    });
  });

  describe("search and ask", () => {
    it("shows live hits and opens the workspace file at the cited heading's line", async () => {
      fake.workspaceFolders.push(notes);
      const done = searchCommand(await signedIn(server.adminToken));
      const pick = await until(() => fake.quickPicks[0], "the quick pick");
      pick.type("heartbeat candidate");
      await until(() => (pick.items.length ? pick.items : undefined), "hits");
      const item = pick.items[0] as HitItem;
      expect(item.label).toBe("Raft");
      expect(item.description).toBe("Raft › Elections");
      expect(item.detail).toMatch(/hears no heartbeat/);
      expect(item.alwaysShow).toBe(true);
      pick.pick(item);
      await done;
      await until(() => fake.opened[0], "the file to open");
      expect(fake.opened[0]).toEqual({ path: path.join(notes, "raft.md"), line: 8 });
    });

    it("opens the web page for a hit outside the workspace", async () => {
      const done = searchCommand(await signedIn(server.adminToken));
      const pick = await until(() => fake.quickPicks[0], "the quick pick");
      pick.type("heartbeat");
      await until(() => (pick.items.length ? pick.items : undefined), "hits");
      pick.pick(pick.items[0]);
      await done;
      // At the cited chunk (and its anchor, where the page scrolls), not the document's record.
      const { hit } = pick.items[0] as HitItem;
      const url = await until(() => fake.external[0], "the browser");
      expect(hit.citation.anchor).toEqual(expect.any(Number));
      expect(url).toBe(`${server.baseUrl}/#open/${hit.document_id}/${hit.chunk_id}//${hit.citation.anchor}`);
    });

    it("a PDF hit opens the cited page on the web page, not the document record — no token in the address", async () => {
      const papers = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-papers-"));
      fs.writeFileSync(path.join(papers, "leases.pdf"), leasesPdf());
      await server.addFolder(papers);
      fake.workspaceFolders.push(papers); // in the workspace, and still no text to open in the editor
      const admin = await signedIn(server.adminToken);
      const done = searchCommand(admin);
      const pick = await until(() => fake.quickPicks[0], "the quick pick");
      pick.type("quorum lease round trip");
      await until(() => (pick.items.length ? pick.items : undefined), "hits");
      const item = pick.items[0] as HitItem;
      expect(item.hit.citation.path).toBe(path.join(papers, "leases.pdf"));
      expect(item.description).toBe("Leases · p. 2");
      pick.pick(item);
      await done;
      const url = await until(() => fake.external[0], "the browser");
      expect(url).toBe(`${server.baseUrl}/#open/${item.hit.document_id}/${item.hit.chunk_id}`);
      expect(url).not.toContain(server.adminToken);
      expect(fake.opened).toEqual([]);
      // What the web page shows at that address (open.js asks this): page 2, the lines boxed.
      const client = await admin.client();
      const query = new URLSearchParams({ chunk: item.hit.chunk_id });
      const response = await client.send(`/v1/documents/${item.hit.document_id}/view?${query}`);
      const view = (await response.json()) as { kind: string; page: number; boxes: number[][] };
      expect(view).toMatchObject({ kind: "page", page: 2 });
      expect(view.boxes.length).toBeGreaterThan(0);
      fs.rmSync(papers, { recursive: true, force: true });
    });

    it("the search box keeps the query and its hits after opening a hit; signing out forgets them", async () => {
      fake.workspaceFolders.push(notes);
      await secrets.store(TOKEN_KEY_PREFIX + server.baseUrl, server.adminToken);
      const context = { secrets, subscriptions: [] as { dispose(): void }[] };
      activate(context as unknown as vscodeTypes.ExtensionContext);
      const search = () => fake.commands.get("docshelf.search")!() as Promise<void>;

      const first = search();
      const pick = await until(() => fake.quickPicks[0], "the quick pick");
      pick.type("heartbeat candidate");
      await until(() => (pick.items.length ? pick.items : undefined), "hits");
      const hits = pick.items as readonly HitItem[];
      const title = pick.title;
      pick.pick(hits[0]);
      await first;
      await until(() => fake.opened[0], "the file to open");

      const again = search();
      const box = await until(() => fake.quickPicks[1], "the quick pick again");
      expect(box.value).toBe("heartbeat candidate");
      expect((box.items as readonly HitItem[]).map((i) => i.hit.chunk_id)).toEqual(
        hits.map((i) => i.hit.chunk_id),
      );
      expect(box.title).toBe(title);
      expect(box.activeItems).toEqual([box.items[0]]); // the hit opened last
      // Shown as they were: no new search (VS Code echoes the value set; nothing follows).
      const shown = box.items;
      await new Promise((r) => setTimeout(r, DEBOUNCE_MS * 2));
      expect(box.items).toBe(shown);
      expect(box.busy).toBe(false);
      // The next hit, from the same list.
      box.pick(box.items[0]);
      await again;

      await fake.commands.get("docshelf.signOut")!();
      await secrets.store(TOKEN_KEY_PREFIX + server.baseUrl, server.adminToken);
      const fresh = search();
      const empty = await until(() => fake.quickPicks[2], "a fresh quick pick");
      expect(empty.value).toBe("");
      expect(empty.items).toEqual([]);
      empty.hide();
      await fresh;
      for (const d of context.subscriptions) d.dispose();
    });

    it("asks: a cited answer in a webview, escaped; a citation opens its place", async () => {
      fake.workspaceFolders.push(notes);
      const panel = new AskPanel(await signedIn(server.adminToken));
      await panel.ask("What does a follower do without a heartbeat?");
      const view = fake.webviews[0];
      expect(view.webview.html).toMatch(/<h1>What does a follower do without a heartbeat\?<\/h1>/);
      expect(view.webview.html).toMatch(/<a href="#" class="cite" data-n="1">/);
      expect(view.webview.html).toMatch(/Content-Security-Policy" content="default-src 'none'/);
      // Streamed: "Asking", then the page as sentences arrive, then the whole answer.
      expect(view.pages[0]).toContain("Asking docshelf…");
      expect(view.pages.some((p) => p.includes("Writing…"))).toBe(true);
      expect(view.webview.html).not.toContain("Writing…");
      expect(view.webview.html).toMatch(/Extractive: sentences taken from the sources/);
      view.messages.fire({ type: "open", n: 1 });
      const opened = await until(() => fake.opened[0], "the cited file");
      expect(opened.path).toBe(path.join(notes, "raft.md"));
    });
  });

  describe("library", () => {
    it("groups the documents by source and folder, failed ones first and marked; Retry re-runs one", async () => {
      const carol = await signedIn();
      const uploads = new Uploads(carol);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-lib-"));
      // A failure a retry may help: an encrypted PDF, on a server with a PDF password.
      fs.writeFileSync(path.join(dir, "zzz-locked.pdf"), encryptedPdf("library"));
      await uploads.addFiles(Uri.file(path.join(dir, "zzz-locked.pdf")) as unknown as vscodeTypes.Uri);
      fs.rmSync(dir, { recursive: true, force: true });

      const library = new LibraryProvider(carol);
      const top = await library.getChildren();
      const item = (node: LibraryNode) => library.getTreeItem(node);
      expect(top.map((n) => item(n).label)).toEqual(["Failed", "Uploads"]); // carol only uploads
      expect(top.map((n) => item(n).contextValue)).toEqual([GROUP_CONTEXT, GROUP_CONTEXT]);
      const failed = await library.getChildren(top[0]);
      const broken = failed.find((n) => item(n).label === "zzz-locked")!;
      expect(item(broken).contextValue).toBe(FAILED_CONTEXT);
      expect(item(broken).description).toMatch(/^Failed · pdf$/);
      expect((item(broken).iconPath as { id: string }).id).toBe("error");
      // Under Uploads too (by type when there are several), as its own row.
      const under = async (node: LibraryNode): Promise<LibraryNode[]> =>
        node.kind === "group"
          ? (await Promise.all((await library.getChildren(node)).map(under))).flat()
          : [node];
      const uploaded = await under(top[1]);
      const again = uploaded.find((n) => item(n).label === "zzz-locked")!;
      expect(item(again).contextValue).toBe(FAILED_CONTEXT);
      expect(item(again).id).not.toBe(item(broken).id);

      await library.retry(broken);
      expect(fake.messages.at(-1)?.text).toMatch(/zzz-locked — retried, failed again/);

      // The admin's folder source: its name, its documents under it.
      const admin = new LibraryProvider(await signedIn(server.adminToken));
      const sources = await admin.getChildren();
      const notesGroup = sources.find((n) => item(n).label === path.basename(notes));
      expect(notesGroup && item(notesGroup).tooltip).toBe(notes);
      const inside = notesGroup ? await admin.getChildren(notesGroup) : [];
      expect(inside.map((n) => item(n).label)).toContain("Raft");
    });
  });

  it("the Library view is empty without a token, and shows no error (its welcome offers Sign in)", async () => {
    expect(await new LibraryProvider(session(secrets)).getChildren()).toEqual([]);
    expect(fake.messages).toEqual([]);
    const welcome = manifest.contributes.viewsWelcome[0];
    expect(welcome).toMatchObject({ view: "docshelf.library", when: `!${SIGNED_IN_CONTEXT}` });
    expect(welcome.contents).toContain("(command:docshelf.signIn)");
  });

  it("activate registers every command the manifest declares", () => {
    const context = { secrets, subscriptions: [] as { dispose(): void }[] };
    activate(context as unknown as vscodeTypes.ExtensionContext);
    const declared = manifest.contributes.commands.map((c) => c.command).sort();
    expect([...fake.commands.keys()].sort()).toEqual(declared);
    for (const d of context.subscriptions) d.dispose();
  });
});
