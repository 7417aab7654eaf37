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

/** The words of a query worth highlighting: letters and digits, two or more, lower-cased. */
export function queryTerms(query) {
  const terms = new Set();
  for (const match of query.toLowerCase().matchAll(/[\p{L}\p{N}_]{2,}/gu)) terms.add(match[0]);
  return [...terms].sort((a, b) => b.length - a.length);
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `text` as text nodes with every word starting with a query term wrapped in <mark>. */
export function highlighted(text, terms) {
  const fragment = document.createDocumentFragment();
  if (!terms.length) {
    fragment.append(document.createTextNode(text));
    return fragment;
  }
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])(?:${terms.map(escapeRegExp).join("|")})`,
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
