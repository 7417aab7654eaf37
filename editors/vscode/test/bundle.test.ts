// The shipped bundle (what the .vsix holds) loads in Node with `vscode` provided from
// outside, as the editor provides it, and its activate() registers every declared command.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import Module, { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";

import { afterAll, expect, it } from "vitest";
import type * as vscodeTypes from "vscode";

import manifest from "../package.json";
import { FAILED_CONTEXT } from "../src/library";
import * as fakeVscode from "./fake-vscode";

const out = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-bundle-"));
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;

it("the production bundle activates and registers the manifest's commands", () => {
  const outfile = path.join(out, "extension.js");
  execFileSync(process.execPath, ["esbuild.mjs", "--production", `--outfile=${outfile}`]);
  const loader = Module as unknown as { _load: Load };
  const original = loader._load;
  loader._load = function (request, parent, isMain) {
    return request === "vscode" ? fakeVscode : original.call(this, request, parent, isMain);
  };
  try {
    const extension = createRequire(import.meta.url)(outfile) as {
      activate: (c: vscodeTypes.ExtensionContext) => void;
    };
    fakeVscode.resetFake();
    const context = { secrets: new fakeVscode.FakeSecrets(), subscriptions: [] as { dispose(): void }[] };
    extension.activate(context as unknown as vscodeTypes.ExtensionContext);
    expect([...fakeVscode.fake.commands.keys()].sort()).toEqual(
      manifest.contributes.commands.map((c) => c.command).sort(),
    );
    for (const d of context.subscriptions) d.dispose();
  } finally {
    loader._load = original;
  }
  expect(manifest.main).toBe("./dist/extension.js");
});

it("the manifest's menus name only declared commands; the library view exists", () => {
  const declared = new Set(manifest.contributes.commands.map((c) => c.command));
  const menus = Object.values(manifest.contributes.menus).flat();
  expect(menus.length).toBeGreaterThan(0);
  for (const entry of menus) expect(declared).toContain(entry.command);
  expect(manifest.contributes.views.explorer.map((v) => v.id)).toContain("docshelf.library");
  const retry = manifest.contributes.menus["view/item/context"].filter(
    (m) => m.command === "docshelf.library.retry",
  );
  expect(retry.every((m) => m.when.includes(`viewItem == ${FAILED_CONTEXT}`))).toBe(true);
});

it("the README and CHANGELOG packed in the .vsix have no relative links (vsce refuses them)", () => {
  for (const file of ["README.md", "CHANGELOG.md"]) {
    const text = fs.readFileSync(file, "utf8");
    expect(text.match(/\]\((?!https?:|#)[^)]*\)/g) ?? []).toEqual([]);
  }
});

it("vsce packages the extension (as `make vsix` does) with the bundle, manifest and docs", () => {
  const vsix = path.join(out, "docshelf.vsix");
  const vsce = createRequire(import.meta.url).resolve("@vscode/vsce/vsce");
  const args = ["package", "--no-dependencies", "--allow-missing-repository", "--out", vsix];
  execFileSync(process.execPath, [vsce, ...args], { stdio: "pipe" });
  // A zip's central directory keeps the names uncompressed.
  const names = fs.readFileSync(vsix).toString("latin1");
  for (const name of ["extension/package.json", "extension/dist/extension.js", "extension/readme.md"]) {
    expect(names).toContain(name);
  }
  expect(names).not.toContain("extension/src/");
  expect(names).not.toContain("node_modules");
}, 60_000);
