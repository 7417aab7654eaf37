// Bundles the extension into dist/extension.js (CommonJS, as VS Code loads it); `vscode`
// is provided by the editor at run time. `--production` minifies, for the .vsix.
import process from "node:process";

import { build } from "esbuild";

const production = process.argv.includes("--production");

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  format: "cjs",
  platform: "node",
  target: "node20",
  external: ["vscode"],
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
});
