"""The token limits of chunking: the two tiers' and the structural header's."""

from __future__ import annotations

from dataclasses import dataclass

from docshelf.errors import InvalidInput


@dataclass(frozen=True)
class ChunkSettings:
    """Token limits of the two tiers and of the structural header."""

    snippet_max_tokens: int = 200
    snippet_min_tokens: int = 48  # below this a heading does not start a new snippet: short
    # sections are packed, and the snippet keeps its inner headings' places (Chunk.inner),
    # so a search cites it under the one the query's words are in (search/citing.py)
    # With ``snippet_per_heading`` every heading not on a page starts a snippet instead
    # (design (a) of issue 15, off by default: docs/benchmarks/chunking-and-citations.md,
    # "Inner headings").
    snippet_per_heading: bool = False
    section_max_tokens: int = 2200
    section_min_tokens: int = 1200  # a heading starts a new section once this is reached
    header_max_tokens: int = 48

    def __post_init__(self) -> None:
        if min(self.snippet_max_tokens, self.section_max_tokens) < 1:
            raise InvalidInput("chunk token limits must be at least 1")
        if min(self.snippet_min_tokens, self.section_min_tokens, self.header_max_tokens) < 0:
            raise InvalidInput("chunk token minimums and the header limit cannot be negative")

    @classmethod
    def for_window(cls, window: int) -> ChunkSettings:
        """Settings for an embedding model that reads at most ``window`` tokens.

        What is embedded is ``[CLS] header <blank line> snippet [SEP]``: two special
        tokens, the header and the snippet (whitespace costs no tokens). So
        ``snippet_max = window - 2 - header_max``, where ``header_max = min(48,
        window // 4)`` leaves a small window most of its room for text. Snippets
        are kept between 16 and 512 tokens (SPEC §3: snippets are for precise
        recall, roughly 250-600 tokens even for large models); ``snippet_min`` is
        a quarter of ``snippet_max``, at most 48 (it applies to headings on pages:
        ``snippet_per_heading``). Sections keep their defaults.
        """
        if window < 32:
            raise InvalidInput(f"an embedding window of {window} tokens is too small to chunk for")
        header = min(48, window // 4)
        snippet_max = min(512, max(16, window - 2 - header))
        return cls(
            snippet_max_tokens=snippet_max,
            snippet_min_tokens=min(48, snippet_max // 4),
            header_max_tokens=header,
        )
