"""Weak hits: whether a hit matches the query at all, as a person would judge it.

A fused score says how a hit ranks among the candidates, not whether it matches: the
best of a list scores near 0.85 or 1.0 whatever the query (min-max fusion), so a
nonsense query's first hit scored 0.85. A hit is **weak** when it holds less than half
of the query's content words (``WORDS``; its title and headings count) and its
embedding is less similar to the query's than ``MEANING_FLOOR`` for the model (cosine
of the query as typed, not of the feedback-moved one). The result is weak when every
hit on the page is.

Measured on docqa-dev (docs/benchmarks/what-people-read.md): with all-MiniLM-L6-v2 at 0.35
and half the words, 79 of 80 nonsense and off-topic queries came out weak, none of
the 80 answerable questions, and none of the 73 gold hits among their top 10. Only the
models measured have a floor: with another model, or no query vector (lexical search,
whose every hit holds a query word), no hit is called weak.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from docshelf.search.citing import query_words
from docshelf.search.evidence import held
from docshelf.search.pipeline import Fixed, Search

WORDS = 0.5  # the share of the query's content words a hit holds, below which it may be weak
MEANING_FLOOR = {"all-MiniLM-L6-v2": 0.35}  # cosine; per model: each has its own spread


class Weak(Fixed):
    """Each hit on the page marked weak or not (see the module's docstring)."""

    name: ClassVar[str] = "weak"

    def __call__(self, search: Search) -> None:
        embedder = search.parts.embedder()
        floor = MEANING_FLOOR.get(embedder.model_id) if embedder is not None else None
        query = search.query_vector
        if floor is None or query is None or not search.hits:
            return
        wanted = query_words(search.parsed.text)
        vectors = search.parts.store.get_vectors([h.chunk.id for h in search.hits])
        hits = []
        for h in search.hits:
            vector = vectors.get(h.chunk.id)
            similar = vector is None or float(query @ vector) >= floor  # not embedded: unknown
            holds = held(wanted, h.chunk.retrieval_text)
            weak = not similar and len(holds) < WORDS * len(wanted)
            hits.append(dataclasses.replace(h, weak=weak) if weak else h)
        search.hits = hits
