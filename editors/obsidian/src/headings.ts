// Which line of a note a citation's heading path points at. docshelf cites a heading path
// (`["Raft", "Elections"]`), not a line: the plugin finds that heading in the note as it
// is now — ATX and setext headings, outside code fences, after the YAML frontmatter. The
// heading text is compared as docshelf stores it (links and emphasis reduced to words).

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
    .replace(/[*_`~=]/g, "")
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

/**
 * The 0-based line of the heading that `headingPath` names: the heading whose open
 * ancestors match the whole path; else the deepest heading matching the path's last
 * elements; else the line where `snippet` begins; else 0 (the top).
 */
export function citedLine(text: string, headingPath: readonly string[], snippet = ""): number {
  const path = headingPath.map(normalizeHeading).filter(Boolean);
  if (path.length > 0) {
    const open: Heading[] = [];
    let best: { line: number; score: number } | undefined;
    for (const h of markdownHeadings(text.split(/\r\n|\r|\n/))) {
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
  return text.slice(0, at).split(/\r\n|\r|\n/).length - 1;
}
