"""Recall: the candidates of each engine, for the query's words (lexical) and its
meaning (vector), filters honoured.

In hybrid search on a large library, the lexical engine answers on another thread while
the vector engine searches (both let go of the GIL while they work); below
``SIDE_BY_SIDE`` vectors the hand-over costs more than the overlap saves.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ClassVar, TypeVar

from docshelf.search.pipeline import Fixed, Search, timed
from docshelf.search.query import lexical_terms

T = TypeVar("T")
SIDE_BY_SIDE = 250_000  # vectors in the ANN graph from which both engines answer at once


class Recall(Fixed):
    """Each engine's list for the query (only the lexical one in lexical mode, only the
    vector one in vector mode), ``Search.size`` candidates each."""

    name: ClassVar[str] = "recall"

    def __call__(self, search: Search) -> None:
        parts, mode = search.parts, search.mode
        terms = lexical_terms(search.parsed.text)

        def lexical() -> list[tuple[str, float]]:
            with timed(search.timings, "lexical"):
                return parts.lexical.search(terms, search.size, search.filters, search.told)

        if mode == "lexical":
            search.lexical = lexical()
            return
        embedder = parts.embedder()
        assert embedder is not None  # (the retriever searches lexically without one)
        with timed(search.timings, "embed"):  # (the model takes every core it is given)
            search.query_vector = embedder.embed([search.parsed.text])[0]
        side = None
        if mode == "hybrid":
            if getattr(parts.vector, "graph_size", 0) >= SIDE_BY_SIDE:
                side = _beside(lexical)
            else:
                search.lexical = lexical()
        try:
            with timed(search.timings, "vector"):
                search.vector = parts.vector.search(
                    search.query_vector, search.size, search.filters, search.told
                )
        finally:
            if side is not None:
                search.lexical = side.result()


_SIDE: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool) of _beside


def _beside(work: Callable[[], T]) -> Future[T]:
    """``work`` started on another thread (a small pool per process, made on first use:
    a forked child makes its own)."""
    global _SIDE
    side = _SIDE
    if side is None or side[0] != os.getpid():
        side = _SIDE = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="docshelf-recall"))
    return side[1].submit(work)
