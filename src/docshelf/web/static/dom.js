// Small DOM helpers. Text always goes in as text nodes: nothing a document says is
// ever parsed as HTML (no innerHTML anywhere on this page).

/** An element with attributes, listeners (`onclick: fn`) and children (nodes or text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children: nodes as they are, anything else as a text node. */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Words too common to be worth a highlight (the lexical index does not rank by them).
const STOPWORDS = new Set(
  (
    "a an and are as at be but by do does for from has have how i if in into is it its " +
    "me my no not of on or our so than that the their them then there these they this " +
    "to up us was we were what when where which who why will with you your"
  ).split(" "),
);

/** The words of a query worth highlighting: letters and digits, two or more, lower-cased,
 * without stopwords and without filter terms (`tag:x`). */
export function queryTerms(query) {
  const terms = new Set();
  const words = query.toLowerCase().replace(/\b\w+:\S+/gu, " ");
  for (const match of words.matchAll(/[\p{L}\p{N}_]{2,}/gu)) {
    if (!STOPWORDS.has(match[0])) terms.add(match[0]);
  }
  return [...terms].sort((a, b) => b.length - a.length);
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `text` as text nodes with the query's words wrapped in <mark>: a whole word, or, for a
 * term of four letters or more, the term with an ending of up to three letters ("elect"
 * marks "elects" and "election"; "docs" never marks "docstrings", "do" never "docs"). */
export function highlighted(text, terms) {
  const fragment = document.createDocumentFragment();
  if (!terms.length) {
    fragment.append(document.createTextNode(text));
    return fragment;
  }
  const alternatives = terms.map((t) =>
    t.length >= 4 ? `${escapeRegExp(t)}\\p{L}{0,3}` : escapeRegExp(t),
  );
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])(?:${alternatives.join("|")})(?![\\p{L}\\p{N}_])`,
    "giu",
  );
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    fragment.append(document.createTextNode(text.slice(last, match.index)));
    fragment.append(h("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  fragment.append(document.createTextNode(text.slice(last)));
  return fragment;
}

export function formatBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  let value = n;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i += 1;
  }
  return `${value >= 10 || i === 0 ? Math.round(value) : value.toFixed(1)} ${units[i]}`;
}

export function formatDate(seconds, { time = false } = {}) {
  if (!seconds) return "—";
  const options = { year: "numeric", month: "short", day: "numeric" };
  if (time) Object.assign(options, { hour: "2-digit", minute: "2-digit" });
  return new Date(seconds * 1000).toLocaleString(undefined, options);
}

export function formatScore(value) {
  return value === null || value === undefined ? "—" : value.toFixed(3);
}

/** The last part of a path, for short labels. */
export function basename(path) {
  const parts = String(path).split(/[\\/]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : String(path);
}

/** Run `fn` once calls stop for `ms` milliseconds. */
export function debounce(fn, ms) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  debounced.flush = (...args) => {
    clearTimeout(timer);
    fn(...args);
  };
  return debounced;
}

/** A status badge: the word is always there, the colour only repeats it. */
export function statusBadge(status) {
  const kind =
    status === "complete" ? "ok" : status === "failed" ? "bad" : status ? "busy" : "unknown";
  return h("span", { class: `badge badge-${kind}` }, status || "unknown");
}

/** An error message, with a Retry button when trying again may help (the server could
 * not be reached, or was unavailable): a failed request never leaves a dead page. */
export function failure(error, retry, { canRetry = true } = {}) {
  const again = canRetry && retry && (error?.status === 0 || error?.status >= 500);
  return h(
    "span",
    { class: "failure", role: "alert" },
    h("span", { class: "error" }, error?.message ?? String(error)),
    again
      ? [
          " ",
          h(
            "button",
            {
              type: "button",
              class: "retry-request",
              onclick: (event) => {
                event.currentTarget.disabled = true;
                retry();
              },
            },
            "Retry",
          ),
        ]
      : null,
  );
}

// File types (the `type` filter's values) as a person names them.
export const TYPE_NAMES = {
  markdown: "Markdown",
  text: "Text",
  pdf: "PDF",
  html: "HTML",
  docx: "DOCX",
  rst: "reStructuredText",
};
