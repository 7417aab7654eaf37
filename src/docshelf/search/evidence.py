"""What a candidate's own text says about a query, known before any score is trusted
(issue 15: exact matches never buried, the right section first): whether the query *is*
the candidate's heading (the same content words, at least two), or occurs word for word
in its text (at least ``VERBATIM_WORDS`` words) — what a user who remembers a title or a
line types. Pure functions over places, texts and the query's words; the stage that
turns them into an order is ``stages/exact.py``.

Words are compared case-folded, as runs of word characters, by their English (Snowball)
stem (``stem``), the stemmer the lexical engines use: "Lifecycle" matches "lifecycle",
"plugins" "plugin" and "nominated" "nomination".
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import Stemmer

from docshelf.model import Chunk
from docshelf.search.query import STOPWORDS
from docshelf.store.lexical_fields import header_fields

_WORDS = re.compile(r"\w+")
# A query of at least this many words found word for word in a text is a remembered line.
VERBATIM_WORDS = 4


class Placed(Protocol):
    """What the evidence reads of a candidate besides its text: its place and its own
    heading's sources. A ``Chunk`` is one; so is the ``ChunkPlace`` search reads of every
    candidate (whose ``header`` is kept only for the first chunk of its tier, the one
    place ``own_heading`` reads it)."""

    @property
    def document_id(self) -> str: ...
    @property
    def heading_path(self) -> tuple[str, ...]: ...
    @property
    def page_start(self) -> int | None: ...
    @property
    def index(self) -> int: ...
    @property
    def header(self) -> str | None: ...


def words(text: str) -> list[str]:
    """The words of ``text``, case-folded, in order."""
    return _WORDS.findall(text.casefold())


_LOCAL = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    """This thread's Snowball English stemmer (one stemmer must not serve two threads)."""
    found: Stemmer.Stemmer | None = getattr(_LOCAL, "stemmer", None)
    if found is None:
        found = _LOCAL.stemmer = Stemmer.Stemmer("english")
    return found


def stem(word: str) -> str:
    """The English (Snowball) stem of a case-folded word: "nominated", "nomination" and
    "nominate" are all "nomin"."""
    result: str = _stemmer().stemWord(word)
    return result


def stems(words: Sequence[str]) -> list[str]:
    """``[stem(w) for w in words]``, in one call."""
    result: list[str] = _stemmer().stemWords(words)
    return result


@functools.lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s words that are not stopwords (remembered: a search asks it
    of the same few headings again and again)."""
    return frozenset(stems([w for w in words(text) if w not in STOPWORDS]))


def own_heading(chunk: Placed) -> str:
    """The heading a snippet sits under: the last of its heading path; for the top of a
    file without headings (page 1 of a PDF, say), the document's title."""
    if chunk.heading_path:
        return chunk.heading_path[-1]
    if chunk.index == 0 and chunk.page_start in (None, 1):
        return header_fields(chunk.header or "")[0]
    return ""


def words_key(content: frozenset[str]) -> int:
    """A stable 64-bit key of a set of content words (never 0): equal sets, equal keys."""
    joined = "\x1f".join(sorted(content)).encode("utf-8", "surrogatepass")
    key = int.from_bytes(hashlib.blake2b(joined, digest_size=8).digest(), "little")
    return key or 1


def heading_key(chunk: Placed) -> int:
    """The key of the content words of the snippet's own heading (``words_key``), or 0
    when it has fewer than two (no query names it then: ``names_heading``). The sidecar
    indexes keep it per snippet, so the exact-match rule finds the candidates whose
    heading the query may name without reading each one's place; a key that matches is
    only a hint, confirmed by ``names_heading`` on the place itself."""
    content = content_words(own_heading(chunk))
    return words_key(content) if len(content) >= 2 else 0


def query_heading_key(query: str) -> int:
    """The key a candidate's ``heading_key`` must equal for ``query`` to name its heading;
    0 when the query has fewer than two content words (it names no heading)."""
    content = content_words(query)
    return words_key(content) if len(content) >= 2 else 0


# What ``heading_key`` depends on: this code (bump the version when ``own_heading``,
# ``content_words``, ``stem`` or ``words_key`` change: tests/test_entries.py holds the keys
# of a probe list) and the stopwords. A sidecar index records the stamp its entries were
# made with and ignores them, until it makes them again, when it differs: a change never
# leaves keys that no longer match.
HEADING_KEY_VERSION = 2
HEADING_KEY_STAMP = f"{HEADING_KEY_VERSION}:{words_key(STOPWORDS):016x}"


def names_heading(query: frozenset[str], chunk: Placed) -> bool:
    """The query is the snippet's heading (or, at a file's top, its title): the same
    content words, at least two of them."""
    return len(query) >= 2 and content_words(own_heading(chunk)) == query


def verbatim_pattern(query: Sequence[str], least: int = VERBATIM_WORDS) -> re.Pattern[str] | None:
    """A pattern finding the query's words in order, separated by anything but word
    characters, in case-folded text; None below ``least`` words (and for none)."""
    if len(query) < max(least, 1):
        return None
    return re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, query)) + r"(?!\w)")


def has_verbatim(query: Sequence[str], chunk: Chunk) -> bool:
    """The whole query, at least ``VERBATIM_WORDS`` words, occurs word for word in the
    snippet's text (case, punctuation and spacing aside)."""
    pattern = verbatim_pattern(query)
    return pattern is not None and _quotes(pattern, max(query, key=len), chunk.text)


def _quotes(pattern: re.Pattern[str], longest: str, text: str) -> bool:
    folded = text.casefold()
    # the plain substring test first: most texts lack the query's longest word
    return longest in folded and pattern.search(folded) is not None


def named_headings(
    query: str,
    places: Mapping[str, Placed],
    heads: Mapping[str, int],
    read: Callable[[list[str]], Mapping[str, Placed]],
) -> set[str]:
    """The candidates whose heading ``query`` names (``names_heading``): among those of
    ``places``, by their place; among those known only by their heading key (``heads``),
    by their place read with ``read``, for those whose key is the query's."""
    key = query_heading_key(query)
    if not key:  # fewer than two content words: the query names no heading
        return set()
    content = content_words(query)
    named = {i for i, c in places.items() if names_heading(content, c)}
    maybe = [i for i, head in heads.items() if head == key and i not in places]
    if maybe:
        named |= {i for i, c in read(maybe).items() if names_heading(content, c)}
    return named


def quoting(query: str, texts: Callable[[], Mapping[str, str]]) -> set[str]:
    """The ids of the texts that hold the whole query word for word (``has_verbatim``);
    ``texts`` (id -> text) is read only when the query is long enough to be quoted."""
    sequence = words(query)
    if len(sequence) < VERBATIM_WORDS:
        return set()
    longest = max(sequence, key=len)
    # the texts that hold the longest word first: most lack it, and a query's pattern is
    # compiled only when one holds it
    holding = [(i, text) for i, text in texts().items() if longest in text.casefold()]
    if not holding:
        return set()
    pattern = verbatim_pattern(sequence)
    assert pattern is not None
    return {i for i, text in holding if _quotes(pattern, longest, text)}


def exact_matches(query: str, chunks: Sequence[Chunk]) -> tuple[set[str], set[str]]:
    """The ids of ``chunks`` whose heading the query names, and of the others whose text
    holds it word for word (a title is named in many a link and list; its heading is
    one)."""
    content = content_words(query)
    named = {c.id for c in chunks if names_heading(content, c)}
    return named, quoting(query, lambda: {c.id: c.text for c in chunks}) - named


def passage_evidence(query: frozenset[str], texts: Sequence[str]) -> list[float]:
    """What each of one document's passages says of a query, apart from what they all
    share: the share of the query's words (``citing.query_words``: stems, stopwords
    aside) a passage holds, each word weighted by how rare it is among these passages,
    ``log((n + 1) / (df + 0.5))`` — a word every passage holds (the paper's title, its
    subject) tells them apart by little; one only this page holds, by much. In [0, 1]."""
    bags = [held(query, text) for text in texts]
    n = len(bags)
    weight = {w: math.log((n + 1) / (sum(w in b for b in bags) + 0.5)) for w in query}
    total = sum(weight.values())
    if total <= 0:
        return [0.0] * n
    return [sum(weight[w] for w in bag) / total for bag in bags]


def held(query: frozenset[str], text: str) -> set[str]:
    """The stems of ``query`` that ``text`` holds: ``{stem(w) for w in words(text)} &
    query``, each distinct word stemmed once."""
    if not query:
        return set()
    return set(stems(list(set(words(text))))) & query
