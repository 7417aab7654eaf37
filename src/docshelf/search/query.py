"""Turning a user's query into lexical terms, whatever characters it holds."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
# Very common English words: dropped from the lexical query when other words
# remain, since matching them costs time and adds almost nothing to BM25.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "how",
        "do",
        "does",
        "did",
    ]
)
MAX_TERMS = 32


def lexical_terms(query: str) -> list[str]:
    """Words of the query, lowercased, deduplicated, stopwords dropped when possible.

    Only runs of word characters survive, so quotes, ``AND``, ``NEAR(``, ``*``
    or ``-`` can never reach the FTS engine as syntax (the store also quotes
    every term).
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    content = [w for w in words if w not in _STOPWORDS]
    return (content or words)[:MAX_TERMS]
