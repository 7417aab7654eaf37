"""The hits as the caller sees them: the page (``limit`` hits), each document under the
caller's own name for it, each hit with its section's text when asked for, and the
facet counts over the candidates' documents when asked for."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from docshelf.model import Citation
from docshelf.search import citing
from docshelf.search.pipeline import Fixed, Search


class SeenBy(Fixed):
    """The page of hits, as ``Search.user_id`` sees their documents."""

    name: ClassVar[str] = "view"

    def __call__(self, search: Search) -> None:
        hits = search.hits[: search.limit]
        user_id = search.user_id
        if user_id is not None:
            docs = list({h.document.id: h.document for h in hits}.values())
            seen = {d.id: d for d in search.parts.seen_by(docs, user_id)}
            for n, h in enumerate(hits):
                doc = seen[h.document.id]
                if doc is not h.document:
                    at = citing.place_of(h.chunk, h.citation)
                    citation = Citation.for_chunk(h.chunk, doc, at)
                    hits[n] = dataclasses.replace(h, document=doc, citation=citation)
        search.hits = hits


class Expand(Fixed):
    """Each hit with its parent section (``expand="parent-section"``)."""

    name: ClassVar[str] = "expand"

    def __call__(self, search: Search) -> None:
        if search.expand != "parent-section":
            return
        parents = search.reader.parents([h.chunk for h in search.hits])
        search.hits = [
            dataclasses.replace(h, context=parents.get(h.chunk.parent_id or ""))
            for h in search.hits
        ]


class Facets(Fixed):
    """Counts per tag, concept and file type over the documents of the candidates."""

    name: ClassVar[str] = "facets"

    def __call__(self, search: Search) -> None:
        if not search.facets_wanted:
            return
        unique = tuple(dict.fromkeys(search.pool))
        docs = search.parts.store.list_documents(document_ids=unique) if unique else []
        facets: dict[str, dict[str, int]] = {"tag": {}, "concept": {}, "type": {}}
        for doc in docs:
            for key, values in (
                ("tag", doc.tags),
                ("concept", doc.concept_ids),
                ("type", (doc.file_type,)),
            ):
                for value in values:
                    facets[key][value] = facets[key].get(value, 0) + 1
        search.facets = {
            k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in facets.items()
        }
