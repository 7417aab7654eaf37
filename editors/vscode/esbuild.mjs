// Bundles the extension into dist/extension.js (CommonJS, as VS Code loads it); `vscode`
// is provided by the editor at run time. `--production` minifies, for the .vsix;
// `--outfile=PATH` writes elsewhere (the bundle test).
import process from "node:process";

import { build } from "esbuild";

const production = process.argv.includes("--production");
const outfile = process.argv.find((a) => a.startsWith("--outfile="))?.slice(10) ?? "dist/extension.js";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile,
  format: "cjs",
  platform: "node",
  target: "node20",
  external: ["vscode"],
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
});
