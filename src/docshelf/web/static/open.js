// The open view (#open/<document id>/<chunk id>[/<page>], #cite/<chunk id>): a document at
// the place a hit or an answer cites. A PDF shows the cited page as an image, with boxes
// drawn over the cited words and previous/next page; any other document shows its text,
// built here from the server's blocks with DOM calls (text nodes only), scrolled to the
// cited heading with the cited blocks marked. The Ask view embeds one beside an answer
// (`embedded`): there it pages in place and scrolls its own panel, never the page.

import { failure, h, replace } from "./dom.js";

const SAFE_LINK = /^(https?:|mailto:)/i;

/** The `obsidian://open?…` link the server made for a vault's note (nothing else passes). */
export function obsidianHref(uri) {
  return typeof uri === "string" && uri.startsWith("obsidian://open?") ? uri : null;
}

/** The open view's address: a document, at a chunk, a page, and the citation's anchor (the
 * inner heading of the chunk it is cited under: the view scrolls there). */
export function openHref(documentId, chunkId = null, page = null, anchor = null) {
  const parts = [documentId, chunkId ?? "", page ?? "", anchor ?? ""].map((p) =>
    encodeURIComponent(p),
  );
  while (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  return `#open/${parts.join("/")}`;
}

/** Save a Blob under `name` (an <a download> on an object URL, clicked once). */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name || "document", hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The window as the frame a document is scrolled in: what of it is on the screen. */
const WINDOW = {
  area: () => ({ top: 0, bottom: window.innerHeight }),
  scrollBy: (top) => window.scrollBy({ top, behavior: "instant" }),
};

export class OpenView {
  /** `root`: the element it fills; `prefix`: of its elements' ids; `embedded`: inside
   * another view, whose heading `${prefix}-title` names it (no title of its own, headings a
   * level lower, pages turned in place, a link to the open view, the focus left alone);
   * `frame`: what it scrolls to the cited place (`area()`, the part of the screen it shows,
   * and `scrollBy(dy)`) — the window by default. */
  constructor(
    api,
    { root = document.getElementById("open-view"), prefix = "open", embedded = false, frame = WINDOW } = {},
  ) {
    this.api = api;
    this.root = root;
    this.prefix = prefix;
    this.embedded = embedded;
    this.frame = frame;
    this.imageUrl = null;
    this.sequence = 0;
  }

  /** Show `documentId` at `chunkId` (either may be empty: a chunk alone finds its document),
   * a text document at the citation's `anchor` (its inner heading) when one is given. */
  async show(documentId, chunkId, page, anchor = null) {
    const sequence = ++this.sequence;
    this.anchor = anchor;
    replace(this.root, h("p", { class: "status", role: "status" }, "Opening…"));
    let view;
    try {
      view = documentId
        ? await this.api.view(documentId, {
            chunk: chunkId || null,
            page: page || null,
            at: anchor ?? null,
          })
        : await this.api.request("GET", `/v1/chunks/${encodeURIComponent(chunkId)}/view`);
      const elsewhere = anchor !== null && view.kind !== "page" && view.anchor !== anchor;
      const turned = Boolean(page) && view.kind === "page" && view.page !== page;
      if (!documentId && (elsewhere || turned) && sequence === this.sequence) {
        // cited under an inner heading of its chunk, or at its second page: now its
        // document is known, open there
        view = await this.api.view(view.document_id, {
          chunk: chunkId,
          page: turned ? page : null,
          at: anchor,
        });
      }
    } catch (error) {
      if (sequence !== this.sequence) return;
      replace(
        this.root,
        h(this.embedded ? "h3" : "h1", {}, "Cannot open this document"),
        h("p", {}, failure(error, () => this.show(documentId, chunkId, page, anchor))),
      );
      return;
    }
    if (sequence !== this.sequence) return;
    this.view = view;
    const [body, shown] =
      view.kind === "page" ? await this.renderPage(view, sequence) : [this.renderText(view), null];
    if (sequence !== this.sequence) return;
    replace(this.root, this.renderHead(view), body);
    if (shown) {
      await shown();
    } else if (view.target) {
      const target = document.getElementById(`${this.prefix}-${view.target}`);
      if (target) {
        this.frame.scrollBy(target.getBoundingClientRect().top - this.frame.area().top - MARGIN);
        if (!this.embedded) target.focus({ preventScroll: true });
      }
    }
  }

  /** Nothing shown, and nothing on its way. */
  clear() {
    this.sequence += 1;
    this.view = null;
    replace(this.root);
  }

  /** A link to another page of the document: in the open view, its address; embedded,
   * the page turned in place (the address still opens it in a new tab). */
  pageLink(view, page, attrs, ...children) {
    const href = page ? openHref(view.document_id, view.chunk_id, page) : null;
    const onclick =
      this.embedded && href
        ? (event) => {
            if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
            event.preventDefault();
            this.show(view.document_id, view.chunk_id, page);
          }
        : null;
    return h("a", { ...attrs, href, onclick }, ...children);
  }

  renderHead(view) {
    const download = h(
      "button",
      {
        type: "button",
        onclick: async (event) => {
          const button = event.currentTarget;
          button.disabled = true;
          try {
            const { blob, name } = await this.api.blob(view.download);
            saveBlob(blob, name);
          } catch (error) {
            button.after(h("span", { class: "error", role: "alert" }, ` ${error.message}`));
          } finally {
            button.disabled = false;
          }
        },
      },
      "Download original",
    );
    const uploaded = String(view.path).startsWith("upload://");
    // embedded: the open view at this place, for a whole window of it
    const whole = this.embedded
      ? h(
          "a",
          {
            class: "button",
            href: openHref(
              view.document_id,
              view.chunk_id,
              view.kind === "page" ? view.page : null,
              view.kind === "page" ? null : this.anchor,
            ),
          },
          "Open full view",
        )
      : null;
    return h(
      "header",
      { class: "open-head" },
      this.embedded ? null : h("h1", { id: `${this.prefix}-title` }, view.title || view.document_id),
      h(
        "p",
        { class: "crumbs" },
        uploaded ? "Uploaded file" : h("code", {}, view.path),
        view.heading_path.length ? ` · ${view.heading_path.join(" › ")}` : "",
      ),
      h(
        "div",
        { class: "open-actions" },
        whole,
        download,
        obsidianHref(view.obsidian)
          ? h("a", { class: "button obsidian", href: obsidianHref(view.obsidian) }, "Open in Obsidian")
          : null,
        h("a", { href: `#library/${encodeURIComponent(view.document_id)}` }, "Document details"),
      ),
    );
  }

  /** The page, and what to do once it is on the screen (zoom, scroll to the passage). */
  async renderPage(view, sequence) {
    const pager = h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      this.pageLink(
        view,
        view.page > 1 ? view.page - 1 : null,
        { class: "button", "aria-disabled": view.page > 1 ? null : "true" },
        "‹ Previous page",
      ),
      h("span", { class: "page-number" }, `Page ${view.page} of ${view.page_count}`),
      this.pageLink(
        view,
        view.page < view.page_count ? view.page + 1 : null,
        { class: "button", "aria-disabled": view.page < view.page_count ? null : "true" },
        "Next page ›",
      ),
    );
    const figure = h("figure", { class: "page-figure" });
    let shown = null;
    try {
      const { blob } = await this.api.blob(view.image);
      if (sequence !== this.sequence) return [figure, null];
      if (this.imageUrl) URL.revokeObjectURL(this.imageUrl);
      this.imageUrl = URL.createObjectURL(blob);
      // The image's size is known before it loads, so the page is laid out at once and
      // the boxes over it are where they will stay.
      const [width, height] = view.image_size ?? [null, null];
      const image = h("img", { src: this.imageUrl, alt: `Page ${view.page} of ${view.title}`, width, height });
      const frame = h("div", { class: "page-frame" }, image);
      for (const [x, y, w, hgt] of view.boxes) {
        const box = h("span", { class: "hl", "aria-hidden": "true" });
        box.style.left = `${x * 100}%`;
        box.style.top = `${y * 100}%`;
        box.style.width = `${w * 100}%`;
        box.style.height = `${hgt * 100}%`;
        frame.append(box);
      }
      figure.append(frame);
      const zoom = passageZoom(view.boxes);
      let zoomFirst = null;
      if (zoom.factor > 1.15) {
        // A whole page on a phone is too small to read: there, it opens zoomed to the
        // cited lines' width (scrolling sideways inside the figure); a button toggles.
        const toggle = h("button", { type: "button", class: "zoom", "aria-pressed": "false" });
        const set = (on) => {
          toggle.setAttribute("aria-pressed", String(on));
          toggle.textContent = on ? "Whole page" : "Zoom to the passage";
          figure.classList.toggle("zoomed", on);
          frame.style.width = on ? `${zoom.factor * 100}%` : "";
        };
        set(false);
        toggle.addEventListener("click", () => {
          set(toggle.getAttribute("aria-pressed") !== "true");
          revealPassage(figure, this.frame);
        });
        pager.append(toggle);
        // a phone, or a panel beside an answer: too narrow for a whole page to be read
        zoomFirst = () =>
          set(window.matchMedia("(max-width: 800px)").matches || figure.clientWidth < 700);
      }
      shown = async () => {
        zoomFirst?.();
        await settled(image);
        revealPassage(figure, this.frame);
      };
      figure.append(h("figcaption", { class: "hint" }, pageCaption(view, this)));
    } catch (error) {
      figure.append(h("p", {}, failure(error, () => this.show(view.document_id, view.chunk_id, view.page))));
    }
    return [h("div", { class: "page-view" }, pager, figure), shown];
  }

  renderText(view) {
    const article = h("article", { class: "reader", "aria-labelledby": `${this.prefix}-title` });
    for (const block of view.blocks) article.append(this.block(block));
    if (view.truncated) {
      article.append(
        h("p", { class: "hint" }, "This document is long: only the part around the citation is shown."),
      );
    }
    return article;
  }

  block(block) {
    const attrs = { id: `${this.prefix}-${block.id}`, class: block.cited ? "cited" : null };
    switch (block.kind) {
      case "heading": {
        const level = Math.min(6, block.level + (this.embedded ? 2 : 1)); // under the title
        return h(`h${level}`, { ...attrs, tabindex: "-1" }, runs(block.inlines));
      }
      case "code":
        return h("pre", attrs, h("code", {}, block.text));
      case "list":
        return h(
          "ul",
          attrs,
          block.items.map((item) => h("li", {}, runs(item))),
        );
      case "table":
        if (block.rows) {
          return h(
            "table",
            attrs,
            h(
              "tbody",
              {},
              block.rows.map((row) => h("tr", {}, row.map((cell) => h("td", {}, runs(cell))))),
            ),
          );
        }
        return h("pre", attrs, block.text);
      case "quote":
        return h("blockquote", attrs, block.inlines ? runs(block.inlines) : block.text);
      default:
        return h("p", attrs, block.inlines ? runs(block.inlines) : block.text);
    }
  }
}

/** How much wider than the figure the page must be for the cited lines to fill it (at
 * most 3 times; 1 with no boxes): every line whole in the figure, never cut at its side. */
function passageZoom(boxes) {
  if (!boxes.length) return { factor: 1 };
  const left = Math.min(...boxes.map(([x]) => x));
  const right = Math.max(...boxes.map(([x, , w]) => x + w));
  return { factor: Math.min(3, 0.96 / Math.max(right - left, 0.05)) };
}

/** Once the image is decoded (or failed to): its boxes are then painted over it. */
async function settled(image) {
  try {
    await image.decode();
  } catch {
    // a broken image still has its size from its attributes
  }
}

const MARGIN = 16; // px kept around the passage when it is scrolled into view

/** Scroll the frame (the window, or a panel) and a zoomed figure sideways so the cited
 * passage is in view: its first lines, and as many of the following ones as the frame
 * shows, in the middle. */
function revealPassage(figure, frame) {
  if (!figure.isConnected) return; // another view replaced it meanwhile
  const boxes = [...figure.querySelectorAll(".hl")].map((box) => box.getBoundingClientRect());
  if (!boxes.length) return;
  const area = frame.area();
  const height = area.bottom - area.top;
  // The lines from the first on that fit the frame's height (a passage going on in the
  // next column starts at the foot of this one: its start comes first).
  let shown = [boxes[0]];
  for (const box of boxes.slice(1)) {
    const top = Math.min(box.top, ...shown.map((b) => b.top));
    const bottom = Math.max(box.bottom, ...shown.map((b) => b.bottom));
    if (bottom - top > height - 2 * MARGIN) break;
    shown = [...shown, box];
  }
  const top = Math.min(...shown.map((b) => b.top));
  const bottom = Math.max(...shown.map((b) => b.bottom));
  const left = Math.min(...shown.map((b) => b.left));
  const right = Math.max(...shown.map((b) => b.right));
  if (figure.classList.contains("zoomed")) {
    const view = figure.getBoundingClientRect();
    const spare = view.width - (right - left);
    figure.scrollLeft += spare > 0 ? left - view.left - spare / 2 : left - view.left - MARGIN;
  }
  const spare = height - (bottom - top);
  frame.scrollBy(top - area.top - (spare > 2 * MARGIN ? spare / 2 : MARGIN));
}

/** What the caption says: where the cited passage is, from this page. */
function pageCaption(view, opener) {
  const [first, last] = view.cited_pages ?? [null, null];
  if (first === null) return "";
  const here = first <= view.page && view.page <= last;
  if (!here) return `The cited passage is on page ${first}${last > first ? `–${last}` : ""}.`;
  const more =
    view.page < last
      ? [" It goes on on ", opener.pageLink(view, view.page + 1, {}, `page ${view.page + 1}`), "."]
      : [];
  return [view.boxes.length ? "The cited passage is highlighted." : "The cited passage is on this page.", ...more];
}

/** Inline runs as nodes: text, <strong>/<em>/<code>, and links to http(s)/mailto only. */
function runs(inlines) {
  return inlines.map((run) => {
    const tag = { strong: "strong", em: "em", code: "code" }[run.style];
    let node = tag ? h(tag, {}, run.text) : document.createTextNode(run.text);
    if (run.href && SAFE_LINK.test(run.href)) {
      node = h("a", { href: run.href, rel: "noopener noreferrer nofollow", target: "_blank" }, node);
    }
    return node;
  });
}
