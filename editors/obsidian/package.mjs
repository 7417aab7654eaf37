// The release zip: docshelf-obsidian.zip holding a `docshelf/` folder with main.js,
// manifest.json and styles.css — unzipped into VAULT/.obsidian/plugins/ it is the plugin.
// Refuses a manifest whose version is not package.json's (or is missing from versions.json).
// `--main=PATH` packs another build, `--out=PATH` writes elsewhere (the bundle test).
import * as fs from "node:fs";
import process from "node:process";

import JSZip from "jszip";

const arg = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback;
const main = arg("main", "main.js");
const out = arg("out", "docshelf-obsidian.zip");

const manifest = JSON.parse(fs.readFileSync("manifest.json", "utf8"));
const { version } = JSON.parse(fs.readFileSync("package.json", "utf8"));
const versions = JSON.parse(fs.readFileSync("versions.json", "utf8"));
if (manifest.version !== version) {
  throw new Error(`manifest.json says version ${manifest.version}, package.json ${version}`);
}
if (versions[version] !== manifest.minAppVersion) {
  throw new Error(
    `versions.json must map ${version} to the manifest's minAppVersion ${manifest.minAppVersion}`,
  );
}

const zip = new JSZip();
// A fixed date: the same files make the same zip.
const date = new Date(Date.UTC(2026, 0, 1));
zip.file(manifest.id, null, { dir: true, date });
const put = (name, bytes) => zip.file(`${manifest.id}/${name}`, bytes, { date, createFolders: false });
put("main.js", fs.readFileSync(main));
put("manifest.json", fs.readFileSync("manifest.json"));
put("styles.css", fs.readFileSync("styles.css"));
const bytes = await zip.generateAsync({
  type: "nodebuffer",
  compression: "DEFLATE",
  compressionOptions: { level: 9 },
  platform: "UNIX",
});
fs.writeFileSync(out, bytes);
console.log(`${out}: ${bytes.length} bytes`);
