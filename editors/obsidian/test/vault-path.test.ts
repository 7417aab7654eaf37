// Path mapping between the paths docshelf indexed and the vault's own paths.

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  extensionOf,
  resolveCitation,
  vaultFile,
  vaultFilter,
  vaultRelative,
  webUrl,
} from "../src/vault-path";

describe("vaultRelative", () => {
  it("gives the path inside the vault, with /", () => {
    expect(vaultRelative("/home/me/vault/notes/raft.md", "/home/me/vault")).toBe("notes/raft.md");
    expect(vaultRelative("/home/me/vault/raft.md", "/home/me/vault/")).toBe("raft.md");
    expect(vaultRelative("/home/me/vault//notes/./raft.md", "/home/me/vault")).toBe("notes/raft.md");
  });

  it("is undefined outside the vault, for the vault itself, and for a sibling with the same prefix", () => {
    expect(vaultRelative("/home/me/papers/p.pdf", "/home/me/vault")).toBeUndefined();
    expect(vaultRelative("/home/me/vault", "/home/me/vault")).toBeUndefined();
    expect(vaultRelative("/home/me/vault2/a.md", "/home/me/vault")).toBeUndefined();
    expect(vaultRelative("upload://abc123", "/home/me/vault")).toBeUndefined();
    expect(vaultRelative("/home/me/vault/a.md", "")).toBeUndefined();
  });

  it("never lets `..` climb out of the vault, nor mixes absolute and relative paths", () => {
    expect(vaultRelative("/home/me/vault/../secret.md", "/home/me/vault")).toBeUndefined();
    expect(vaultRelative("home/me/vault/a.md", "/home/me/vault")).toBeUndefined();
  });

  it("compares Windows paths without regard to case or slash direction", () => {
    expect(vaultRelative("C:\\Users\\Me\\Vault\\Notes\\Raft.md", "c:\\users\\me\\vault")).toBe(
      "Notes/Raft.md",
    );
    expect(vaultRelative("C:/Users/Me/Vault/a.md", "C:\\Users\\Me\\Vault")).toBe("a.md");
    expect(vaultRelative("/home/Me/Vault/a.md", "/home/me/vault")).toBeUndefined();
  });

  it("is the inverse of joining, for any vault path", () => {
    const segment = fc
      .stringMatching(/^[A-Za-z0-9 _-][A-Za-z0-9 ._-]{0,11}$/)
      .filter((s) => s !== "." && s !== "..");
    fc.assert(
      fc.property(
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        (base, inside) => {
          const root = `/${base.join("/")}`;
          expect(vaultRelative(`${root}/${inside.join("/")}`, root)).toBe(inside.join("/"));
        },
      ),
    );
  });
});

describe("resolveCitation", () => {
  const files = new Set(["notes/raft.md", "papers/p.pdf", "misc/readme.txt"]);
  const vault = { roots: ["/srv/copy-of-vault", "/home/me/vault"], exists: (p: string) => files.has(p) };
  const cite = (path: string, page: number | null = null) => ({ path, page_start: page, anchor: 21 });

  it("opens a vault note as a note, under any of the vault's roots", () => {
    expect(resolveCitation(cite("/home/me/vault/notes/raft.md"), "c1", "d1", "http://h:1", vault)).toEqual({
      kind: "note",
      path: "notes/raft.md",
    });
    expect(
      resolveCitation(cite("/srv/copy-of-vault/notes/raft.md"), "c1", "d1", "http://h:1", vault),
    ).toEqual({
      kind: "note",
      path: "notes/raft.md",
    });
  });

  it("opens a vault PDF at its cited page", () => {
    expect(resolveCitation(cite("/home/me/vault/papers/p.pdf", 4), "c1", "d1", "http://h:1", vault)).toEqual({
      kind: "pdf",
      path: "papers/p.pdf",
      page: 4,
    });
  });

  it("sends uploads, other folders, missing files and other formats to the web page", () => {
    const web = (path: string, documentId?: string) =>
      resolveCitation(cite(path), "chunk_1", documentId, "http://h:1/", vault);
    expect(web("upload://abc", "doc_1")).toEqual({
      kind: "web",
      url: "http://h:1/#open/doc_1/chunk_1//21",
      why: "upload",
    });
    expect(web("/home/me/papers/x.md", "doc_1")).toMatchObject({ kind: "web", why: "outside" });
    expect(web("/home/me/vault/notes/gone.md")).toMatchObject({ kind: "web", why: "outside" });
    expect(web("/home/me/vault/misc/readme.txt")).toEqual({
      kind: "web",
      url: "http://h:1/#cite/chunk_1",
      why: "format",
    });
  });

  it("finds the file only when the vault holds it", () => {
    expect(vaultFile("/home/me/vault/notes/raft.md", vault)).toBe("notes/raft.md");
    expect(vaultFile("/home/me/vault/notes/other.md", vault)).toBeUndefined();
  });
});

describe("webUrl and extensionOf", () => {
  it("makes the web page's addresses, escaped, without the token", () => {
    expect(webUrl("http://h:1", "chunk/1")).toBe("http://h:1/#cite/chunk%2F1");
    expect(webUrl("http://h:1", "c", "d", null)).toBe("http://h:1/#open/d/c");
    expect(webUrl("http://h:1", "c", "d", 0)).toBe("http://h:1/#open/d/c//0");
  });

  it("reads extensions in lower case, not a dot-file's name", () => {
    expect(extensionOf("a/B.MD")).toBe(".md");
    expect(extensionOf("a/.hidden")).toBe("");
    expect(extensionOf("C:\\x\\p.pdf")).toBe(".pdf");
  });
});

describe("vaultFilter", () => {
  it("keeps to the vault's source when the vault is one", () => {
    const sources = [
      { id: "src_a", path: "/home/me/papers" },
      { id: "src_v", path: "/home/me/vault" },
    ];
    expect(vaultFilter(sources, ["/home/me/vault/"])).toEqual({ source: "src_v" });
  });

  it("keeps to the vault's folder when a larger folder holds it", () => {
    expect(vaultFilter([{ id: "src_home", path: "/home/me" }], ["/home/me/vault"])).toEqual({
      path: "/home/me/vault/",
    });
  });

  it("is undefined when no source holds the vault", () => {
    expect(vaultFilter([{ id: "src_a", path: "/home/me/papers" }], ["/home/me/vault"])).toBeUndefined();
  });
});
