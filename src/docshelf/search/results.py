"""What search answers with, and its bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from docshelf.model import Chunk, Citation, Hit
from docshelf.plaintext import Markup
from docshelf.search.spans import JOIN

ContextMode = Literal["snippet-window", "parent-section", "section-neighborhood"]
CONTEXT_MODES: tuple[str, ...] = get_args(ContextMode)
# snippet: the best snippet of each cited place (file + heading path or page); all: every
# snippet; section / document: the best snippet of each section chunk / document.
GROUPS: tuple[str, ...] = ("snippet", "section", "document", "all")
MAX_LIMIT = 200
CACHED_LIMIT = 50  # searches asking for more hits (or expanded sections) are not cached
CANDIDATE_POOL = 100  # candidates per side (lexical, vector) before fusion


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    notice: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    candidates: list[str] = field(default_factory=list)  # document ids of the fused pool
    facets: dict[str, dict[str, int]] = field(default_factory=dict)
    # documents searched, and of them those by their words only (waiting for vectors)
    backlog: tuple[int, int] | None = None

    @property
    def weak(self) -> bool:
        """Every hit is weak (search/stages/weak.py): nothing matches the query well."""
        return bool(self.hits) and all(h.weak for h in self.hits)


@dataclass
class ContextResult:
    """A hit's context: its ``chunks`` in order, their ``text``, where the hit's own
    text sits in it (``hit_span``), the markup the text carries (``plaintext.markup_of``)
    and whether what the mode reads goes on before or after the chunks (``cut_before``,
    ``cut_after``: a section longer than its bound, search/spans.py)."""

    chunk_id: str
    mode: str
    chunks: list[Chunk]
    citation: Citation
    markup: Markup = "plain"
    cut_before: bool = False
    cut_after: bool = False

    @property
    def text(self) -> str:
        return JOIN.join(c.text for c in self.chunks)

    @property
    def hit_span(self) -> tuple[int, int]:
        """Where the hit's own text is in ``text``: ``[start, end)``, character offsets
        (the whole text, should the hit not be one of the chunks)."""
        at = 0
        for c in self.chunks:
            if c.id == self.chunk_id:
                return at, at + len(c.text)
            at += len(c.text) + len(JOIN)
        return 0, len(self.text)
