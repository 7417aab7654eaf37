"""The ``Reranker`` port: reorder the top-K fused hits with a stronger model.

``none``                   the default: the fused order stands
``cross-encoder:/path``    a sentence-transformers CrossEncoder from a local folder
``llm``                    a relevance-judging prompt through the configured LLM

``DOCSHELF_RERANKER`` picks one; ``DOCSHELF_RERANK_TOP_K`` (20) bounds how many
hits are reranked. A reranker that fails or runs out of its time budget
returns ``None`` and the fused order stands — reranking can only help.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from docshelf.errors import InvalidInput, Unavailable

if TYPE_CHECKING:
    from docshelf.llm import LLM


class Reranker(Protocol):
    name: str

    def scores(self, query: str, passages: Sequence[str]) -> list[float] | None:
        """One relevance score per passage (higher is better), or None to keep the order."""
        ...


def make_reranker(spec: str, llm: LLM | None = None) -> Reranker | None:
    """The reranker ``spec`` (``Settings.reranker``) names, or None."""
    spec = spec.strip()
    if spec in ("", "none"):
        return None
    if spec.startswith("cross-encoder:"):
        from docshelf.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(spec.removeprefix("cross-encoder:"))
    if spec == "llm":
        if llm is None:
            raise Unavailable(
                "DOCSHELF_RERANKER=llm needs an LLM: set DOCSHELF_LLM_URL and DOCSHELF_LLM_MODEL"
            )
        from docshelf.rerank.llm_judge import LLMJudge

        return LLMJudge(llm)
    raise InvalidInput(f"Unknown reranker {spec!r}; use none, cross-encoder:/path/to/model or llm")


__all__ = ["Reranker", "make_reranker"]
