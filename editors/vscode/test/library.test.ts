// The Library view over a library the size of the one in issue 42 (586 documents: a vault
// of notes, a folder of papers, the Flask docs, an upload), served by a fake fetch: grouped
// by source and folder, not one flat list; loaded once, each group's children made when
// it is expanded.

import { beforeEach, describe, expect, it } from "vitest";
import type * as vscodeTypes from "vscode";

import { type DocumentRecord, type Fetch, type SourceRecord } from "../src/api";
import { DOCUMENT_CONTEXT, FAILED_CONTEXT, GROUP_CONTEXT, LibraryProvider } from "../src/library";
import { type GroupNode, type LibraryNode, childNodes, rootNodes } from "../src/library-tree";
import { Session } from "../src/session";
import { TOKEN_KEY_PREFIX } from "../src/tokens";
import { FakeSecrets, TreeItemCollapsibleState, fake, resetFake } from "./fake-vscode";

const BASE = "http://docshelf.test";

const SOURCES: SourceRecord[] = [
  { id: "src_vault", path: "/home/me/vault", kind: "folder" },
  { id: "src_papers", path: "/home/me/papers/", kind: "folder" },
  { id: "src_flask", path: "/home/me/flask-docs", kind: "folder" },
];

// [source, folder under it, how many, file type]
const LAYOUT: [string, string, number, string][] = [
  ["src_vault", "", 6, "markdown"],
  ["src_vault", "01 - Community/Events", 20, "markdown"],
  ["src_vault", "01 - Community/Obsidian Roundup", 60, "markdown"],
  ["src_vault", "02 - Community Expansions/02.01 Plugins by Category", 45, "markdown"],
  ["src_vault", "02 - Community Expansions/02.05 All Community Expansions/Plugins", 90, "markdown"],
  ["src_vault", "02 - Community Expansions/02.05 All Community Expansions/Themes", 80, "markdown"],
  [
    "src_vault",
    "03 - Showcases & Templates/Templates/Plugin-specific templates/Dataview templates",
    8,
    "markdown",
  ],
  ["src_vault", "05 - Concepts", 100, "markdown"],
  ["src_vault", "06 - Inbox", 80, "markdown"],
  ["src_papers", "distributed_systems", 8, "pdf"],
  ["src_papers", "languages/haskell", 1, "pdf"],
  ["src_papers", "languages/smalltalk", 1, "pdf"],
  ["src_papers", "languages-paradigms/functional_programming", 2, "pdf"],
  ["src_papers", "security", 2, "pdf"],
  ["src_papers", "datastores", 1, "pdf"],
  ["src_papers", "processes", 1, "pdf"],
  ["src_papers", "quantum_computing", 1, "pdf"],
  ["src_papers", "data_compression", 1, "pdf"],
  ["src_papers", "audio_comp_sci", 1, "pdf"],
  ["src_papers", "comp_sci_fundamentals_and_history", 1, "pdf"],
  ["src_flask", "", 50, "rst"],
  ["src_flask", "patterns", 16, "rst"],
  ["src_flask", "deploying", 6, "rst"],
  ["src_flask", "tutorial", 4, "rst"],
];

function doc(id: string, path: string, fileType: string, sourceId: string | null, status = "complete") {
  const name = path.split("/").at(-1) ?? path;
  return {
    id,
    title: name.replace(/\.\w+$/, ""),
    path,
    source_id: sourceId,
    file_type: fileType,
    status,
    size_bytes: 100,
    updated_at: 0,
  } satisfies DocumentRecord;
}

function library(): DocumentRecord[] {
  const docs: DocumentRecord[] = [];
  const ext: Record<string, string> = { markdown: "md", pdf: "pdf", rst: "rst" };
  for (const [sourceId, folder, n, type] of LAYOUT) {
    const root = SOURCES.find((s) => s.id === sourceId)!.path.replace(/\/$/, "");
    for (let i = 0; i < n; i++) {
      const path = [root, folder, `${type}-${docs.length}.${ext[type]}`].filter(Boolean).join("/");
      // Two papers failed (a truncated PDF, say).
      const failed = folder === "distributed_systems" && i < 2;
      docs.push(doc(`doc_${docs.length}`, path, type, sourceId, failed ? "failed" : "complete"));
    }
  }
  docs.push(doc(`doc_${docs.length}`, "upload://doc_u/scan.pdf", "pdf", null));
  return docs;
}

const DOCS = library();

/** The server's answers: pages of documents, the sources; every request counted. */
function server(): { fetch: Fetch; requests: string[] } {
  const requests: string[] = [];
  const fetch: Fetch = (input) => {
    const url = new URL(input instanceof Request ? input.url : input);
    requests.push(url.pathname + url.search);
    if (url.pathname === "/v1/documents") {
      const limit = Number(url.searchParams.get("limit"));
      const offset = Number(url.searchParams.get("offset"));
      return Promise.resolve(Response.json({ documents: DOCS.slice(offset, offset + limit) }));
    }
    if (url.pathname === "/v1/sources") return Promise.resolve(Response.json({ sources: SOURCES }));
    return Promise.resolve(Response.json({ error: { code: "not_found", message: "?" } }, { status: 404 }));
  };
  return { fetch, requests };
}

async function provider(fetch: Fetch): Promise<LibraryProvider> {
  const secrets = new FakeSecrets();
  await secrets.store(TOKEN_KEY_PREFIX + BASE, "dsk_test");
  return new LibraryProvider(new Session(secrets as unknown as vscodeTypes.SecretStorage, fetch));
}

interface Shown {
  node: LibraryNode;
  item: vscodeTypes.TreeItem;
  children: Shown[];
}

/** Expands every group under `nodes`, as a user clicking through the whole tree would. */
async function expandAll(view: LibraryProvider, nodes: LibraryNode[]): Promise<Shown[]> {
  const out: Shown[] = [];
  for (const node of nodes) {
    const item = view.getTreeItem(node);
    const children = node.kind === "group" ? await expandAll(view, await view.getChildren(node)) : [];
    out.push({ node, item, children });
  }
  return out;
}

const flat = (shown: Shown[]): Shown[] => shown.flatMap((s) => [s, ...flat(s.children)]);
const labelOf = (item: vscodeTypes.TreeItem): string =>
  typeof item.label === "string" ? item.label : (item.label?.label ?? "");
const labels = (shown: Shown[]): string[] => shown.map((s) => labelOf(s.item));
const find = (shown: Shown[], label: string): Shown => {
  const found = shown.find((s) => s.item.label === label);
  if (!found) throw new Error(`no ${label} among ${labels(shown).join(", ")}`);
  return found;
};

describe("the Library view", () => {
  beforeEach(() => {
    resetFake();
    fake.settings["docshelf.serverUrl"] = BASE;
  });

  it("groups 586 documents by source, then folder: the Library tree is not one flat list of 586 documents", async () => {
    expect(DOCS).toHaveLength(586);
    const { fetch, requests } = server();
    const view = await provider(fetch);

    const top = await view.getChildren();
    const shown = top.map((node) => ({ node, item: view.getTreeItem(node) }));
    expect(shown.map((s) => s.item.label)).toEqual(["Failed", "flask-docs", "papers", "vault", "Uploads"]);
    expect(shown.map((s) => s.item.description)).toEqual([
      "2",
      "76 rst",
      "20 pdf, 2 failed",
      "489 markdown",
      "1 pdf",
    ]);
    expect(shown.map((s) => s.item.collapsibleState)).toEqual([
      TreeItemCollapsibleState.Expanded, // what needs attention, open
      ...Array<TreeItemCollapsibleState>(4).fill(TreeItemCollapsibleState.Collapsed),
    ]);
    expect(shown[3].item.tooltip).toBe("/home/me/vault");
    expect(shown.every((s) => s.item.contextValue === GROUP_CONTEXT)).toBe(true);
    // One load: three pages of documents and the sources.
    expect([...requests].sort()).toEqual([
      "/v1/documents?limit=200&offset=0",
      "/v1/documents?limit=200&offset=200",
      "/v1/documents?limit=200&offset=400",
      "/v1/sources",
    ]);

    const tree = await expandAll(view, top);
    expect(requests).toHaveLength(4); // expanding asks the server nothing
    const all = flat(tree);
    // VS Code needs every id unique, a failed document being in two places.
    const ids = all.map((s) => s.item.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Every document once outside Failed; no list longer than the largest folder.
    const documents = flat(tree.slice(1)).filter((s) => s.node.kind === "document");
    expect(new Set(documents.map((s) => (s.node.kind === "document" ? s.node.doc.id : "")))).toEqual(
      new Set(DOCS.map((d) => d.id)),
    );
    expect(documents).toHaveLength(586);
    expect(Math.max(...all.map((s) => s.children.length))).toBe(100); // "05 - Concepts"

    const vault = find(tree, "vault").children;
    expect(labels(vault).slice(0, 5)).toEqual([
      "01 - Community",
      "02 - Community Expansions",
      // a chain of folders with nothing else in them is one row
      "03 - Showcases & Templates/Templates/Plugin-specific templates/Dataview templates",
      "05 - Concepts",
      "06 - Inbox",
    ]);
    expect(vault.slice(5).every((s) => s.node.kind === "document")).toBe(true); // its 6 own notes
    expect(vault).toHaveLength(11);
    const expansions = find(vault, "02 - Community Expansions");
    expect(labels(expansions.children)).toEqual([
      "02.01 Plugins by Category",
      "02.05 All Community Expansions",
    ]);
    expect(expansions.item.tooltip).toBe("/home/me/vault/02 - Community Expansions");
    expect(expansions.item.description).toBe("215 markdown");

    const papers = find(tree, "papers").children;
    expect(labels(papers)).toContain("languages");
    expect(labels(papers)).toContain("languages-paradigms/functional_programming");
    expect(labels(find(papers, "languages").children)).toEqual(["haskell", "smalltalk"]);
    const distributed = find(papers, "distributed_systems");
    expect(distributed.item.description).toBe("8 pdf, 2 failed");
    expect(distributed.item.tooltip).toBe("/home/me/papers/distributed_systems");
    expect(distributed.children.map((s) => s.item.contextValue)).toEqual([
      FAILED_CONTEXT,
      FAILED_CONTEXT,
      ...Array<string>(6).fill(DOCUMENT_CONTEXT),
    ]);
    const failed = find(tree, "Failed").children;
    expect(failed.map((s) => s.item.contextValue)).toEqual([FAILED_CONTEXT, FAILED_CONTEXT]);
    expect(failed.map((s) => s.item.label)).toEqual(
      distributed.children.slice(0, 2).map((s) => s.item.label),
    );
  });

  it("Retry and Open take the tree's node (the context menu passes it)", async () => {
    const { fetch } = server();
    const view = await provider(fetch);
    const [failedGroup] = await view.getChildren();
    const [node] = await view.getChildren(failedGroup);
    expect(node.kind).toBe("document");
    await view.open(node);
    expect(fake.external).toEqual([`${BASE}/#library/${node.kind === "document" ? node.doc.id : ""}`]);
  });

  it("lists other sources' documents by their folders, uploads by type, and tells two `notes` apart", () => {
    const sources: SourceRecord[] = [
      { id: "a", path: "/home/me/work/notes", kind: "folder" },
      { id: "b", path: "C:\\Users\\me\\home\\notes", kind: "folder" },
      { id: "f", path: "/srv/one.md", kind: "file" },
    ];
    const docs = [
      doc("d1", "/home/me/work/notes/x.md", "markdown", "a"),
      doc("d2", "C:\\Users\\me\\home\\notes\\sub\\y.md", "markdown", "b"),
      doc("d3", "/srv/one.md", "markdown", "f"),
      doc("d4", "/srv/shared/deep/z.md", "markdown", "someone-elses"),
      doc("d5", "upload://d5/a.pdf", "pdf", null),
      doc("d6", "upload://d6/b.md", "markdown", null),
    ];
    const top = rootNodes(docs, sources);
    expect(top.map((g) => g.label)).toEqual(["home/notes", "work/notes", "Other files", "Uploads"]);
    const windows = childNodes(top[0]);
    expect(windows.map((n) => (n.kind === "group" ? n.tooltip : n.doc.id))).toEqual([
      "C:\\Users\\me\\home\\notes\\sub",
    ]);
    const other = childNodes(top[2]) as GroupNode[];
    expect(other.map((g) => [g.label, g.path])).toEqual([["srv", "/srv"]]);
    expect(childNodes(other[0]).map((n) => (n.kind === "group" ? n.label : n.doc.id))).toEqual([
      "shared/deep",
      "d3",
    ]);
    expect(childNodes(top[3]).map((n) => (n.kind === "group" ? n.label : n.doc.id))).toEqual([
      "Markdown",
      "PDF",
    ]);
    // Only uploads: that one group, open.
    expect(rootNodes([docs[4]], [])).toMatchObject([{ label: "Uploads", expanded: true }]);
  });
});
