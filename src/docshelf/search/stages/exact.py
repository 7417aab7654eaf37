"""Exact matches first (every mode): what a user who remembers a title or a line types.

- **named**: every candidate whose heading the query *is* (the same content words, at
  least two; at a file's top, its title) ranks first;
- **quoted**: then the best candidate whose text holds the whole query word for word (at
  least ``evidence.VERBATIM_WORDS`` words; case, punctuation and spacing aside) — only
  the best: a line found in several places is not a line remembered from each.

Measured on docqa-dev and dbpedia-5k together (docs/benchmarks/docqa-dev.md, "Candidates,
on the same libraries").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from docshelf.search.candidate import Candidate, Precedence, lift
from docshelf.search.engines import Verbatim
from docshelf.search.evidence import named_headings, quoting, words
from docshelf.search.pipeline import Fixed, Search

# The most snippets of the library that may quote a query before every candidate's text
# is read instead (``may_quote``).
QUOTABLE = 1_000


class ExactFirst(Fixed):
    name: ClassVar[str] = "exact"

    def __call__(self, search: Search) -> None:
        text, cands, reader = search.parsed.text, search.candidates, search.reader
        heads = {c.id: c.told[1] for c in cands if c.told is not None}
        named = named_headings(text, reader.read_places(cands), heads, reader.places)

        def texts() -> Mapping[str, str]:
            return reader.texts(may_quote(search, cands))

        exact_first(cands, named, quoting(text, texts) - named)


def exact_first(candidates: list[Candidate], named: set[str], verbatim: set[str]) -> None:
    """The candidates of ``named`` first, then the best of ``verbatim`` (in the
    candidates' order); the rest keep their order."""
    quoted = next((c.id for c in candidates if c.id in verbatim), None)
    lift(candidates, named, Precedence.NAMED)
    if quoted is not None:
        lift(candidates, [quoted], Precedence.QUOTED)


def may_quote(search: Search, candidates: Sequence[Candidate]) -> list[str]:
    """The candidates whose text may hold the whole query word for word: those the
    lexical engine cannot rule out (``Verbatim``: by what the engines told of them), or
    all of them."""
    ids = [c.id for c in candidates]
    engine = search.parts.lexical
    if not isinstance(engine, Verbatim) or not all(c.told is not None for c in candidates):
        return ids
    held = engine.may_hold(words(search.parsed.text), QUOTABLE)
    if held is None:
        return ids
    return [c.id for c in candidates if c.told is not None and (c.told[3] or c.told[2] in held)]
