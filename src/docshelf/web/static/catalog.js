// What the page knows about the caller's documents and sources: search facets and
// library links are built from it. Loaded after sign-in; documents a hit mentions that
// are not here yet (added since) are fetched one by one.

import { basename } from "./dom.js";

const PAGE = 1000;

export class Catalog {
  constructor(api) {
    this.api = api;
    this.docs = new Map();
    this.sources = new Map();
    this.total = 0; // the library's count, not the page's
  }

  async load() {
    const [sources, first] = await Promise.all([
      this.api.sources(),
      this.api.documents({ limit: PAGE }),
    ]);
    this.sources = new Map(sources.sources.map((s) => [s.id, s]));
    this.docs = new Map(first.documents.map((d) => [d.id, d]));
    this.total = first.total ?? first.documents.length;
  }

  remember(doc) {
    this.docs.set(doc.id, doc);
  }

  /** Make sure every id in `ids` is known (unknown or unreadable ones are skipped). */
  async ensure(ids) {
    const missing = [...new Set(ids)].filter((id) => !this.docs.has(id));
    await Promise.all(
      missing.map((id) =>
        this.api.document(id).then(
          (doc) => this.remember(doc),
          () => undefined,
        ),
      ),
    );
  }

  title(id) {
    return this.docs.get(id)?.title ?? id;
  }

  sourceLabel(sourceId) {
    const source = this.sources.get(sourceId);
    return source ? basename(source.path) : sourceId;
  }
}
