"""What a sidecar index keeps of each snippet besides its text or its vector: an
``Entry`` — its document, its position in its tier and the key of its own heading.

Chunk and document ids derive from the document's fingerprint (``model.chunk_id``,
``model.document_id``: ``chunk_<fp12>_<n>``, ``doc_<fp16>``), so a document id's 64 bits
and a snippet's position name both ids. With the entry in the index, a search tells
whether it may show a candidate (its document complete: ``Store.incomplete_documents``)
and which document it cites, and finds the candidates whose heading the query may name
(``evidence.heading_key``), without reading each candidate from the store.

Chunks are immutable, so an entry holds as long as its snippet's seq does; whatever
replaces a seq is in the index's change log (search/engines/sidecar.py), and the index answers
for it from the store, not from the entry it had.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docshelf.store.base import ChunkPlace

_DOC = "doc_"
_CHUNK = "chunk_"


# A snippet as an index knows it: (doc, ord, head, wide) — the 64 bits of its document
# id (doc_<16 hex digits>; 0: not derivable, the store is asked), its position in its
# tier (the n of chunk_<fp12>_<n>), evidence.heading_key of its place (0: no heading a
# query can name), and whether its text has word characters beyond ASCII (``wide``).
# Plain tuples: search reads one per candidate.
Entry = tuple[int, int, int, int]

UNKNOWN: Entry = (0, 0, 0, 1)


# What search takes from an entry: (the candidate's document id, its heading key, its
# seq in the index, its ``wide``). A plain tuple: search makes one per candidate.
Known = tuple[str, int, int, int]


class Told(dict[str, Known]):
    """What the engines told of one search's candidates (chunk id -> ``Known``), and the
    chunk id of each seq they named (``named``): a seq the feedback pass finds again is
    not named twice."""

    def __init__(self) -> None:
        super().__init__()
        self.named: dict[int, str] = {}


def entry_of(chunk_id: str, place: ChunkPlace, text: str) -> Entry:
    """The entry of the snippet ``chunk_id`` at ``place`` with ``text``; ``UNKNOWN`` when
    its ids do not follow the fingerprint pattern (a library written some other way: the
    store answers for it)."""
    from docshelf.search.evidence import heading_key

    doc = document_bits(place.document_id)
    if doc == 0 or chunk_id != f"{_CHUNK}{place.document_id[len(_DOC) :][:12]}_{place.index}":
        return UNKNOWN
    return (doc, place.index, heading_key(place), int(wide(text)))


def document_bits(document_id: str) -> int:
    """An entry's ``doc`` for ``document_id``: the 64 bits of ``doc_<16 hex digits>``;
    0 for an id of another shape (no entry names it)."""
    hex16 = document_id[len(_DOC) :]
    if not document_id.startswith(_DOC) or len(hex16) != 16 or hex16 != hex16.lower():
        return 0
    try:
        return int(hex16, 16)
    except ValueError:
        return 0


def wide(text: str) -> bool:
    """Whether ``text`` has a word character beyond ASCII (a letter, mark or number).
    The lexical index cuts and folds such words otherwise than the exact-match rule
    reads them (``evidence.words``: case-folded runs of word characters), so it cannot
    rule such a text out for a quoted line (``SidecarLexicalIndex.may_hold``)."""
    if text.isascii():
        return False
    import unicodedata

    return any(not c.isascii() and unicodedata.category(c)[0] in "LMN" for c in text)


def document_id_of(doc: int) -> str:
    """The document id of an entry's ``doc``."""
    return f"{_DOC}{doc:016x}"
