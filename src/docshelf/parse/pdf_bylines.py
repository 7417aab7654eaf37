"""Who wrote a PDF, where and when: author lists, names, affiliations and dates, told
from titles and headings. Pure functions of strings, no PDF library.

A paper's first page sets its authors, their institutions and its date apart, often
larger than the body text, where the size rules would take them for headings or the
title:

- :func:`is_author_list`: names between commas, ``and`` or footnote marks
  (``Jim Waldo, Geoff Wyant, Ann Wollrath, and Sam Kendall``,
  ``Erik Nygren† Jennifer Sun†``), an institution allowed among them;
- :func:`is_person_name`: a name's words are capitalised (initials and particles
  aside), and the document never uses them in lower case (:func:`lower_case_words`):
  ``Chris Okasaki`` is a name, ``Lazy Rebuilding`` in a paper about laziness is not;
- :func:`is_affiliation`: an institution or an address (``The Queen's University of
  Belfast``, ``Akamai Technologies, 8 Cambridge Center, Cambridge, MA 02142``), its
  words capitalised but for a few links (``of``, ``and``);
- an e-mail address, or a date alone (``September 1996``).

``parse.pdf_structure.bylines`` asks these of the first pages' short texts
(:func:`is_byline`), and takes a name alone for one beside them. Thresholds
and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from docshelf.parse.pdf_thresholds import (
    ADDRESSES,
    AFFILIATION_LINKS,
    AUTHOR_MARK,
    DATE,
    EMAIL,
    INITIALS,
    INSTITUTION,
    NAME_MAX_WORDS,
    NAME_MIN_WORDS,
    NAME_PARTICLES,
    NAME_SEPARATOR,
    POSTAL_CODE,
    SECTION_LINE,
    TOKEN,
)

__all__ = [
    "is_affiliation",
    "is_author_list",
    "is_byline",
    "is_person_name",
    "lower_case_words",
]

_WORD_MARKS = "-'\u2019"  # what a name's word may have inside it (Li-Chun, O'Brien)


def lower_case_words(texts: Iterable[str]) -> set[str]:
    """The words the texts use in lower case somewhere (case folded), e-mail and web
    addresses aside: ordinary words, which a person's name is not made of."""
    tokens: set[str] = set()  # the texts' distinct tokens, each read once
    for text in texts:
        if "@" in text or "://" in text or "www." in text:
            text = ADDRESSES.sub(" ", text)
        tokens.update(text.split())
    return {w.casefold() for token in tokens for w in TOKEN.findall(token) if w[0].islower()}


def is_person_name(text: str, common: Collection[str]) -> bool:
    """A person's name: NAME_MIN_WORDS to NAME_MAX_WORDS words, each an initial (``W.``),
    a particle (``van``) or a capitalised word the document never uses in lower case
    (``common``), with one such word at least."""
    words = text.split()
    if not NAME_MIN_WORDS <= len(words) <= NAME_MAX_WORDS:
        return False
    named = 0
    for word in words:
        if INITIALS.fullmatch(word) or word in NAME_PARTICLES:
            continue
        if not _capitalised(word) or word.casefold() in common:
            return False
        named += 1
    return named > 0


def _name_shaped(text: str) -> bool:
    """Words a name could be made of, whatever the document's words: initials, particles
    and capitalised words, NAME_MIN_WORDS to NAME_MAX_WORDS of them."""
    words = text.split()
    return NAME_MIN_WORDS <= len(words) <= NAME_MAX_WORDS and all(
        INITIALS.fullmatch(w) or w in NAME_PARTICLES or _capitalised(w) for w in words
    )


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and all(c.isalpha() or c in _WORD_MARKS for c in word)


def is_author_list(text: str, common: Collection[str]) -> bool:
    """Authors' names between commas, ``and`` or footnote marks: two names or more, or one
    with a footnote mark, and nothing else but an institution or an e-mail address.

    At least half the names are :func:`is_person_name`; the others need only look like
    one (``Mark Gealy``, where the document says "mark" too).
    """
    parts = [p for p in NAME_SEPARATOR.split(text.strip()) if p]
    shaped = [p for p in parts if _name_shaped(p)]
    if not shaped or len(shaped) < (NAME_MIN_WORDS if AUTHOR_MARK.search(text) is None else 1):
        return False
    names = sum(is_person_name(p, common) for p in shaped)
    others = [p for p in parts if not _name_shaped(p)]
    return 2 * names >= len(shaped) and all(is_affiliation(p) or EMAIL.search(p) for p in others)


def is_affiliation(text: str) -> bool:
    """An institution or an address: a line that names a university, department,
    laboratory or company, or has a postal code, and whose words are capitalised (or
    numbers) but for a few links (``of``, ``and``)."""
    if INSTITUTION.search(text) is None and POSTAL_CODE.search(text) is None:
        return False
    words = [w.strip(",.;:()*") for w in text.split()]
    return all(not w[:1].islower() or w in AFFILIATION_LINKS for w in words if w)


def is_byline(text: str, common: Collection[str]) -> bool:
    """Who wrote the document, where or when, by the text alone: an author list, an
    affiliation, an e-mail address or a date alone; never a numbered section's heading.

    A name alone is a byline only beside one (``parse.pdf_structure.bylines``): a
    heading of two capitalised words in a short text looks like a name too.
    """
    stripped = text.strip()
    if SECTION_LINE.fullmatch(stripped) is not None:
        return False
    return bool(
        EMAIL.search(stripped)
        or DATE.fullmatch(stripped)
        or is_affiliation(stripped)
        or is_author_list(stripped, common)
    )
