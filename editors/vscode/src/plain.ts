// A snippet as a reader sees it, on one line: Markdown's marks, link syntax, HTML tags and
// comments removed, code kept as written (`Vec<T>` is no tag, `__init__` no emphasis).
// The same reading as the web page's (docshelf's web/static/dom.js `plainText`).

const HELD = /\u{E000}(\d+)\u{E001}/gu;

export function plainSnippet(markdown: string): string {
  const codes: string[] = [];
  return markdown
    .replace(/<!--[\s\S]*?-->|%%[\s\S]*?%%/g, "") // HTML and Obsidian comments
    .replace(/^```[^\n]*$/gm, "")
    .replace(/`([^`\n]+)`/g, (_m, code: string) => `\u{E000}${codes.push(code) - 1}\u{E001}`)
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .replace(/^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/gm, "")
    .replace(/^\s{0,3}>\s?/gm, "")
    .replace(
      /!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]/g,
      (_m, target: string, heading?: string, alias?: string) =>
        alias || [target, heading].filter(Boolean).join(" › "),
    )
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(?<![\p{L}\p{N}_\]])\[([^\]\n]+)\]\[[^\]\n]*\]/gu, "$1") // [text][label]
    .replace(/<\/?[a-z][a-z0-9-]*(?:\s[^<>\n]*)?\/?>/g, "") // lower case: not Option<String>
    .replace(/(^|[^\p{L}\p{N}_])(\*\*|__)(?=\S)([^\n]*?\S)\2(?![\p{L}\p{N}_])/gu, "$1$3")
    .replace(/(^|[^\p{L}\p{N}*])\*(?=\S)([^*\n]*?\S)\*/gu, "$1$2")
    .replace(/(^|[^\p{L}\p{N}_])_(?=\S)([^_\n]*?\S)_(?![\p{L}\p{N}_])/gu, "$1$2")
    .replace(HELD, (_m, i: string) => codes[Number(i)] ?? "")
    .replace(/\s+/g, " ")
    .trim();
}
