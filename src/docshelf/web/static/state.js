// Where the page is, in its address: `#VIEW/ARG/...?KEY=VALUE&...`. The part after "?" is
// a view's state (a search's words, mode, filters and notebook), so a reload or a link
// sent to someone shows the same thing, and Back and Forward walk through it.

/** The address's view, its path arguments (each decoded) and its state. */
export function parseHash(hash = window.location.hash) {
  const raw = hash.replace(/^#/, "");
  const at = raw.indexOf("?");
  const path = at < 0 ? raw : raw.slice(0, at);
  const params = new URLSearchParams(at < 0 ? "" : raw.slice(at + 1));
  const [name, ...args] = path.split("/").map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part; // a hand-typed "%" is kept as it is
    }
  });
  return { name, args, params };
}

/** The address of a view with this state (empty values left out). */
export function hashFor(name, params = new URLSearchParams()) {
  const kept = new URLSearchParams();
  for (const [key, value] of params) if (value !== "") kept.append(key, value);
  const query = kept.toString();
  return `#${name}${query ? `?${query}` : ""}`;
}

/** Put `hash` in the address: a new history entry (`push`) or in place of this one. No
 * hashchange follows (the page already shows that state). */
export function remember(hash, push) {
  if (hash === window.location.hash) return;
  if (push) history.pushState(null, "", hash);
  else history.replaceState(null, "", hash);
}
