// Which line of a file a citation's heading path points at. docshelf cites a heading path
// (`["Raft", "Elections"]`), not a line: the extension finds that heading in the file as
// it is now. Markdown (ATX and setext, outside code fences), reStructuredText (underlined
// titles, levels in order of first appearance) and HTML (<h1>…<h6>).

export interface Heading {
  line: number; // 0-based
  level: number;
  text: string;
}

/** Heading text compared the way docshelf stores it: visible words, no markup, any case. */
export function normalizeHeading(text: string): string {
  return text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // [text](url), ![alt](src)
    .replace(/\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]/g, (_m, a: string, b?: string) => b ?? a)
    .replace(/<[^>]+>/g, "")
    .replace(/[*_`~]/g, "")
    .replace(/&nbsp;/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;

export function markdownHeadings(lines: readonly string[]): Heading[] {
  const out: Heading[] = [];
  let fence: string | undefined;
  let start = 0;
  if (lines[0]?.trim() === "---") {
    // YAML frontmatter: skip to its closing line
    const end = lines.findIndex((l, i) => i > 0 && (l.trim() === "---" || l.trim() === "..."));
    if (end > 0) start = end + 1;
  }
  for (let i = start; i < lines.length; i++) {
    const line = lines[i];
    const f = FENCE.exec(line);
    if (fence !== undefined) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length) fence = undefined;
      continue;
    }
    if (f) {
      fence = f[1];
      continue;
    }
    const atx = ATX.exec(line);
    if (atx) {
      out.push({ line: i, level: atx[1].length, text: atx[2] ?? "" });
      continue;
    }
    const previous = lines[i - 1];
    if (
      i > start &&
      SETEXT.exec(line) &&
      previous !== undefined &&
      previous.trim() !== "" &&
      !ATX.test(previous) &&
      !/^\s{4,}/.test(previous) &&
      !out.some((h) => h.line === i - 1)
    ) {
      out.push({ line: i - 1, level: line.trim()[0] === "=" ? 1 : 2, text: previous.trim() });
    }
  }
  return out;
}

const RST_ADORNMENT = /^([!-/:-@[-`{-~])\1+\s*$/;

export function rstHeadings(lines: readonly string[]): Heading[] {
  const out: Heading[] = [];
  const styles: string[] = []; // "=" or "=o" (with overline), in order of first use
  for (let i = 0; i + 1 < lines.length; i++) {
    const title = lines[i];
    const under = lines[i + 1];
    if (!title.trim() || RST_ADORNMENT.test(title) || !RST_ADORNMENT.test(under)) continue;
    if (under.trim().length < title.trim().length) continue;
    const over = i > 0 && lines[i - 1].trim() === under.trim();
    const style = under.trim()[0] + (over ? "o" : "");
    if (!styles.includes(style)) styles.push(style);
    out.push({ line: over ? i - 1 : i, level: styles.indexOf(style) + 1, text: title.trim() });
    i += 1;
  }
  return out;
}

export function htmlHeadings(lines: readonly string[]): Heading[] {
  const out: Heading[] = [];
  const text = lines.join("\n");
  const starts = lineStarts(text);
  for (const m of text.matchAll(/<h([1-6])\b[^>]*>([\s\S]*?)<\/h\1\s*>/gi)) {
    out.push({ line: lineAt(starts, m.index), level: Number(m[1]), text: m[2] });
  }
  return out;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  return starts;
}

function lineAt(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export function headingsOf(text: string, fileType: string): Heading[] {
  const lines = text.split(/\r\n|\r|\n/);
  if (fileType === "markdown") return markdownHeadings(lines);
  if (fileType === "rst") return rstHeadings(lines);
  if (fileType === "html") return htmlHeadings(lines);
  return [];
}

/**
 * The 0-based line of the heading that `headingPath` names: the heading whose open
 * ancestors match the whole path; else the deepest heading matching the path's last
 * elements; else the line where `snippet` begins; else 0 (the top).
 */
export function citedLine(
  text: string,
  fileType: string,
  headingPath: readonly string[],
  snippet = "",
): number {
  const path = headingPath.map(normalizeHeading).filter(Boolean);
  if (path.length > 0) {
    const headings = headingsOf(text, fileType);
    const open: Heading[] = [];
    let best: { line: number; score: number } | undefined;
    for (const h of headings) {
      while (open.length && open[open.length - 1].level >= h.level) open.pop();
      open.push(h);
      if (normalizeHeading(h.text) !== path[path.length - 1]) continue;
      const names = open.map((o) => normalizeHeading(o.text)).filter(Boolean);
      const score = matchingTail(names, path);
      if (score === path.length && names.length === path.length) return h.line;
      if (!best || score > best.score) best = { line: h.line, score };
    }
    if (best) return best.line;
  }
  return snippetLine(text, snippet) ?? 0;
}

/** How many elements at the end of `names` equal those at the end of `path`. */
function matchingTail(names: readonly string[], path: readonly string[]): number {
  let n = 0;
  while (n < names.length && n < path.length && names[names.length - 1 - n] === path[path.length - 1 - n]) {
    n += 1;
  }
  return n;
}

/** The line where the snippet's first words appear, if they do. */
export function snippetLine(text: string, snippet: string): number | undefined {
  const probe = snippet.trim().split(/\r?\n/)[0]?.slice(0, 60).trim();
  if (!probe) return undefined;
  const at = text.indexOf(probe);
  if (at < 0) return undefined;
  return lineAt(lineStarts(text), at);
}
