// Bundles the plugin into main.js (CommonJS, as Obsidian loads it); `obsidian`, `electron`
// and Node's modules are provided by the app at run time. `--production` leaves out the
// source map (the release zip's main.js; left readable: it is what holds a token);
// `--outfile=PATH` writes elsewhere (the bundle test).
import process from "node:process";

import { build } from "esbuild";

const production = process.argv.includes("--production");
const outfile = process.argv.find((a) => a.startsWith("--outfile="))?.slice(10) ?? "main.js";

await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  outfile,
  format: "cjs",
  platform: "node",
  target: "es2022",
  external: ["obsidian", "electron", "@codemirror/*", "@lezer/*"],
  sourcemap: production ? false : "inline",
  minify: false,
  legalComments: "none",
  logLevel: "warning",
});
