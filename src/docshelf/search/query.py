"""Turning a user's query into lexical terms, whatever characters it holds."""

from __future__ import annotations

import re
from dataclasses import dataclass

from docshelf.search.filters import query_field

_WORD = re.compile(r"\w+", re.UNICODE)
# Very common English words: dropped from the lexical query when other words
# remain, since matching them costs time and adds almost nothing to BM25.
STOPWORDS = frozenset(
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
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


# -- query syntax ----------------------------------------------------------------------
# "a phrase"   must appear as written (case and spacing aside)
# -word        must not appear; -"a phrase" likewise (--word is a word: a flag as typed)
# tag:x path:notes/ type:pdf source:src_… concept:x   filters (search/filters.py), AND-ed
# Anything else is free text. Unbalanced quotes are plain characters: every
# string is a valid query.

_TOKEN = re.compile(r'(-?)"([^"]+)"|(\S+)')


@dataclass(frozen=True)
class ParsedQuery:
    text: str  # what is embedded and lexically matched: free words and phrases
    phrases: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()  # (SearchFilters field, value)

    @property
    def constrained(self) -> bool:
        return bool(self.phrases or self.excluded)


def parse_query(query: str) -> ParsedQuery:
    words: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    fields: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(query):
        negate, quoted, bare = m.group(1), m.group(2), m.group(3)
        if quoted is not None:
            phrase = " ".join(quoted.split())
            if not phrase:
                continue
            if negate:
                excluded.append(phrase)
            else:
                phrases.append(phrase)
                words.append(phrase)
            continue
        key, sep, value = bare.partition(":")
        field = query_field(key, value) if sep else None
        if field is not None:
            fields.append(field)
        elif bare.startswith("-") and _WORD.match(bare[1:]):  # not "--port": a flag
            excluded.append(bare[1:])
        else:
            words.append(bare.replace('"', " "))
    return ParsedQuery(" ".join(words).strip(), tuple(phrases), tuple(excluded), tuple(fields))


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def satisfies(text: str, parsed: ParsedQuery) -> bool:
    """Does a chunk's text contain every phrase and none of the exclusions?"""
    body = _normal(text)
    if any(_normal(p) not in body for p in parsed.phrases):
        return False
    for ex in parsed.excluded:
        pattern = r"(?<!\w)" + re.escape(_normal(ex)) + r"(?!\w)"
        if re.search(pattern, body):
            return False
    return True
