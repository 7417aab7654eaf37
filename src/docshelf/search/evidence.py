"""What a candidate's own text says about a query, known before any score is trusted
(issue 15: exact matches never buried, the right section first).

Pure functions over chunks and the query's words; ``fusion.py`` turns them into an
order. Two kinds of evidence:

``exact``     the query *is* the candidate's heading (the same content words, at least
              two), or else the whole query (at least ``VERBATIM_WORDS`` words) occurs
              word for word in its text (only the best such candidate counts): what a
              user who remembers a title or a line types;
``heading``   how much of the query the heading a snippet sits under names (0..1),
              used only to choose among the snippets of one document.

Words are compared case-folded, as runs of word characters, with a crude English stem
(``stem``), so "Lifecycle" matches "lifecycle" and "plugins" "plugin".
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from docshelf.model import Chunk
from docshelf.search.fusion import Fused, FusionSettings, by_section, within_documents
from docshelf.search.fusion import exact_first as fusion_exact_first
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


def stem(word: str) -> str:
    """A crude English stem, enough to match a query word to a heading word."""
    for suffix in ("ing", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s words that are not stopwords (remembered: a search asks it
    of the same few headings again and again)."""
    return frozenset(stem(w) for w in words(text) if w not in STOPWORDS)


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
HEADING_KEY_VERSION = 1
HEADING_KEY_STAMP = f"{HEADING_KEY_VERSION}:{words_key(STOPWORDS):016x}"


def heading_share(query: frozenset[str], chunk: Placed) -> float:
    """The share of the query's content words that the snippet's own heading names."""
    if not query:
        return 0.0
    heading = content_words(own_heading(chunk))
    return len(query & heading) / len(query)


def names_heading(query: frozenset[str], chunk: Placed) -> bool:
    """The query is the snippet's heading (or, at a file's top, its title): the same
    content words, at least two of them."""
    return len(query) >= 2 and content_words(own_heading(chunk)) == query


def verbatim_pattern(query: Sequence[str]) -> re.Pattern[str] | None:
    """A pattern finding the query's words in order, separated by anything but word
    characters, in case-folded text; None below ``VERBATIM_WORDS`` words."""
    if len(query) < VERBATIM_WORDS:
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


def exact_matches(query: str, chunks: Sequence[Chunk]) -> tuple[set[str], set[str]]:
    """The ids of ``chunks`` whose heading the query names, and of those whose text holds
    it word for word (a title is named in many a link and list; its heading is one)."""
    return _exact_tiers(query, {c.id: c for c in chunks}, lambda: {c.id: c.text for c in chunks})


def needs_places(settings: FusionSettings) -> bool:
    """Whether ``by_evidence`` reads the place of every candidate (the section and
    sibling evidence); the exact-match rule alone needs only those of the candidates
    whose heading key matches the query's (``named_headings``)."""
    return bool(settings.heading_boost or settings.section_evidence or settings.sibling_heading)


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


def needs_text(settings: FusionSettings, query: str) -> bool:
    """Whether ``by_evidence`` reads the candidates' text for ``query`` (the exact-match
    rule, for a query long enough to be quoted); every other evidence needs only the
    candidates' places and headings."""
    return settings.exact_first and verbatim_pattern(words(query)) is not None


def _exact_tiers(
    query: str,
    heads: Mapping[str, Placed],
    texts: Callable[[], Mapping[str, str]],
    named: set[str] | None = None,
) -> tuple[set[str], set[str]]:
    """``exact_matches`` over places and headings (``named``: the title tier, when the
    caller found it), the texts read only when the query is long enough to be quoted."""
    if named is None:
        content = content_words(query)
        named = {i for i, c in heads.items() if names_heading(content, c)}
    sequence = words(query)
    if len(sequence) < VERBATIM_WORDS:
        return named, set()
    longest = max(sequence, key=len)
    # the texts that hold the longest word first: most lack it, and a query's pattern is
    # compiled only when one holds it
    holding = [(i, text) for i, text in texts().items() if longest in text.casefold()]
    if not holding:
        return named, set()
    pattern = verbatim_pattern(sequence)
    assert pattern is not None
    quoting = {i for i, text in holding if _quotes(pattern, longest, text)}
    return named, quoting - named


def place(chunk: Placed) -> tuple[str, tuple[str, ...], int | None]:
    """Where a citation of ``chunk`` points: its file and heading path, or page."""
    return chunk.document_id, chunk.heading_path, chunk.page_start


def by_evidence(
    fused: Sequence[Fused],
    chunks: Mapping[str, Placed],
    query: str,
    settings: FusionSettings,
    texts: Callable[[], Mapping[str, str]] | None = None,
    named: set[str] | None = None,
) -> list[Fused]:
    """The text evidence ``settings`` asks for, applied to the fused candidates in turn:
    section evidence and heading boost (``fusion.by_section``), siblings re-ordered by
    their headings (``fusion.within_documents``), exact matches first
    (``fusion.exact_first``). ``chunks`` may be places (``Placed``); then ``texts`` reads
    the same candidates' texts, called only when ``needs_text``. ``named``: the
    candidates whose heading the query names, when the caller found them
    (``named_headings``: ``chunks`` then need hold only what ``needs_places`` asks)."""
    out = list(fused)
    content = content_words(query)
    if settings.heading_boost or settings.section_evidence:
        places = {i: place(c) for i, c in chunks.items()}
        shared = {i: heading_share(content, c) for i, c in chunks.items()}
        out = by_section(out, places, {i: s for i, s in shared.items() if s}, settings)
    if settings.sibling_heading:
        # only where a heading is what is cited: a page of a PDF is cited by its number
        documents = {i: c.document_id for i, c in chunks.items() if c.page_start is None}
        shares = {i: heading_share(content, c) for i, c in chunks.items()}
        out = within_documents(out, documents, shares, settings.sibling_heading)
    if settings.exact_first:
        named, verbatim = _exact_tiers(query, chunks, texts or (lambda: _texts(chunks)), named)
        # every snippet under the named heading, but only the best of those that merely
        # quote the query: a line found in several places is not a line remembered from each
        quoted = next(({f.id} for f in out if f.id in verbatim), set())
        out = fusion_exact_first(out, named, quoted)
    return out


def _texts(chunks: Mapping[str, Placed]) -> dict[str, str]:
    """The texts of ``chunks`` when they are whole chunks (given places, ``by_evidence``
    must be told how to read the texts)."""
    out: dict[str, str] = {}
    for i, c in chunks.items():
        if not isinstance(c, Chunk):
            raise TypeError("by_evidence was given places without a reader of their texts")
        out[i] = c.text
    return out
