"""What search answers with, and its bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from docshelf.model import Chunk, Citation, Hit

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


@dataclass
class ContextResult:
    chunk_id: str
    mode: str
    chunks: list[Chunk]
    citation: Citation

    @property
    def text(self) -> str:
        return "\n\n".join(c.text for c in self.chunks)
