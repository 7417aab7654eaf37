// @vitest-environment happy-dom
// The shipped bundle (what the release zip holds) loads in Node with `obsidian` provided
// from outside, as the app provides it, and registers its commands; it needs nothing but
// `obsidian` and Node's own modules. The zip holds the plugin's folder, nothing else.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import Module, { builtinModules, createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";

import JSZip from "jszip";
import { afterAll, expect, it } from "vitest";

import manifest from "../manifest.json";
import pkg from "../package.json";
import versions from "../versions.json";
import * as fakeObsidian from "./fake-obsidian";

const out = fs.mkdtempSync(path.join(os.tmpdir(), "docshelf-obsidian-bundle-"));
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));
const bundle = path.join(out, "main.js");

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;

it("the production bundle needs only obsidian and Node's modules, and loads and registers its commands", async () => {
  execFileSync(process.execPath, ["esbuild.mjs", "--production", `--outfile=${bundle}`]);
  const text = fs.readFileSync(bundle, "utf8");
  const required = new Set([...text.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]));
  const builtins = new Set(builtinModules);
  expect([...required].filter((r) => r !== "obsidian" && !builtins.has(r.replace(/^node:/, "")))).toEqual([]);
  expect(required).toContain("obsidian");
  expect(text).not.toContain("sourceMappingURL");

  const loader = Module as unknown as { _load: Load };
  const original = loader._load;
  loader._load = function (request, parent, isMain) {
    return request === "obsidian" ? fakeObsidian : original.call(this, request, parent, isMain);
  };
  let exported: { default: new (app: unknown, manifest: unknown) => fakeObsidian.Plugin };
  try {
    exported = createRequire(import.meta.url)(bundle) as typeof exported;
  } finally {
    loader._load = original;
  }
  const plugin = new exported.default(new fakeObsidian.App(out), manifest);
  await plugin.onload();
  expect([...plugin.commands.keys()].sort()).toEqual(["ask", "index-vault", "search", "stop-indexing"]);
});

it("the manifest, versions.json and package.json agree", () => {
  expect(manifest.id).toBe("docshelf");
  expect(manifest.version).toBe(pkg.version);
  expect((versions as Record<string, string>)[manifest.version]).toBe(manifest.minAppVersion);
  expect(manifest.isDesktopOnly).toBe(true); // Node's http and child_process
  expect(pkg.devDependencies.obsidian).toBe(manifest.minAppVersion); // the typings of the oldest app it runs on
});

it("`npm run package`'s zip holds the plugin's folder: main.js, manifest.json, styles.css", async () => {
  const zipPath = path.join(out, "docshelf-obsidian.zip");
  execFileSync(process.execPath, ["package.mjs", `--main=${bundle}`, `--out=${zipPath}`], { stdio: "pipe" });
  const zip = await JSZip.loadAsync(fs.readFileSync(zipPath));
  const files = Object.values(zip.files)
    .filter((f) => !f.dir)
    .map((f) => f.name)
    .sort();
  expect(files).toEqual(["docshelf/main.js", "docshelf/manifest.json", "docshelf/styles.css"]);
  expect(await zip.file("docshelf/main.js")?.async("string")).toBe(fs.readFileSync(bundle, "utf8"));
  expect(JSON.parse((await zip.file("docshelf/manifest.json")?.async("string")) ?? "")).toEqual(manifest);
  // The same files make the same zip.
  const again = path.join(out, "again.zip");
  execFileSync(process.execPath, ["package.mjs", `--main=${bundle}`, `--out=${again}`], { stdio: "pipe" });
  expect(fs.readFileSync(again).equals(fs.readFileSync(zipPath))).toBe(true);
});
