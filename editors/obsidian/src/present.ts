// What the plugin says: a hit's lines in the search list, where a hit opened, errors in
// words a person can act on. Pure text.

import { ApiError, type Answer, type Hit, Unreachable } from "./api";
import { type Why } from "./vault-path";

export const SNIPPET_CHARS = 200;

export function hitTitle(hit: Hit): string {
  return hit.citation.title || hit.citation.label;
}

export function pageText(hit: Hit): string {
  const { page_start: start, page_end: end } = hit.citation;
  if (start === null) return "";
  return end !== null && end !== start ? `pp. ${start}–${end}` : `p. ${start}`;
}

/** The heading path and page: `Raft › Elections · p. 4`. */
export function hitTrail(hit: Hit): string {
  return [hit.citation.heading_path.join(" › "), pageText(hit)].filter(Boolean).join(" · ");
}

/** The hit's text as a person reads it, on one line, cut at SNIPPET_CHARS. */
export function hitSnippet(hit: Hit): string {
  const text = (hit.display_text ?? hit.text).replace(/\s+/g, " ").trim();
  return text.length > SNIPPET_CHARS ? `${text.slice(0, SNIPPET_CHARS - 1)}…` : text;
}

/** Why a hit opened on the web page rather than in the vault. */
export function whyWeb(why: Why): string {
  if (why === "upload") return "It is an upload, not a file of this vault: opened on docshelf's web page.";
  if (why === "format") return "Obsidian does not open this kind of file: opened on docshelf's web page.";
  return "It is not a file of this vault: opened on docshelf's web page.";
}

/** The plugin is not set up enough to ask the server anything. */
export class NeedsSetup extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NeedsSetup";
  }
}

/** An error in words, with what to do about it. */
export function explain(error: unknown): string {
  if (error instanceof Unreachable) {
    return `${error.message}. Is \`docshelf serve\` running? (The server URL is in Settings → docshelf.)`;
  }
  if (error instanceof ApiError && error.status === 401) {
    return "The server refused the token: set a valid one in Settings → docshelf (`docshelf users create NAME` makes one; the first `docshelf serve` prints the admin's).";
  }
  if (error instanceof ApiError) return `docshelf answered ${error.status}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** What to say above an answer the library does not give, or undefined when it answers. */
export function abstention(answer: Pick<Answer, "answered" | "citations">): string | undefined {
  if (answer.answered === false) return "Your library does not answer this question.";
  if (answer.citations.length === 0) return "Nothing in your library answers this: no source is cited.";
  return undefined;
}
