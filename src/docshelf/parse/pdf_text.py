"""Judging and mending a PDF's extracted text: pure functions of strings, no PDF library.

- :func:`is_unreadable`: a page whose text layer is gibberish. A text layer
  written with a broken font encoding (a Type 3 bitmap font without a Unicode
  map, a subset font whose codes were never mapped) extracts as
  ``78&:9;02.4<=3`` or as control characters; such a page is treated like a
  scanned one. :func:`readable_share` is the share of a page's words that
  look like words.
- :func:`dehyphenate`: a word broken at a line end (``produc-`` / ``tion``)
  is joined, unless the document itself shows the hyphen is real
  (:func:`real_hyphen`: ``well-known``).
- :func:`heading_rejection`: why a short, large line is not a heading — a
  page number, a line that says where its text goes on (``cont'd from page
  580``), a figure or table caption, a formula, unreadable text
  (:func:`is_page_number`, :func:`is_page_reference`, :func:`is_caption`,
  :func:`is_formula`, :func:`is_garbled`) — or None.
- :func:`without_stray_marks`: a title or heading without a lone mark between
  its words (``Replicated . Database``: a speck OCR read).

Thresholds and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from docshelf.parse.pdf_thresholds import (
    ALNUM,
    ASCII_BROKEN,
    ASCII_LETTERS,
    BROKEN_CATEGORIES,
    CAPTION,
    CASE_FLIPS,
    EDGE_PUNCTUATION,
    FORMULA_LETTER_SHARE,
    FORMULA_SYMBOLS,
    FORMULA_TOKENS,
    GARBLED_SYMBOLS,
    HYPHEN_MARK,
    IN_WORD_PUNCTUATION,
    LETTERS_PER_SYMBOL,
    MARKED_BREAK,
    MATH,
    MIN_READABLE_SHARE,
    MIN_WORDS_TO_JUDGE,
    NUMBER,
    PAGE_NUMBER,
    PAGE_NUMBER_DASHES,
    PAGE_REFERENCE,
    PLAIN_WORD,
    RELATION,
    SAMPLE_WORDS,
    STRAY_MARK,
    TOKEN,
    TOKEN_BRACKETS,
    UNREADABLE_WORDS,
    VOWELLESS_LETTERS,
    VOWELS,
    WORD_JOINER,
)

__all__ = [
    "HYPHEN_MARK",
    "MIN_WORDS_TO_JUDGE",
    "SAMPLE_WORDS",
    "dehyphenate",
    "heading_rejection",
    "is_caption",
    "is_formula",
    "is_garbled",
    "is_page_number",
    "is_page_reference",
    "is_unreadable",
    "readable_share",
    "real_hyphen",
    "vocabulary",
    "without_stray_marks",
]


def _is_word(token: str) -> bool:
    """A token that reads as a word or a number (edge punctuation aside)."""
    if PLAIN_WORD.fullmatch(token):
        return True
    core = token.strip(EDGE_PUNCTUATION)
    if not core:
        return False
    if NUMBER.fullmatch(core):
        return True
    parts = WORD_JOINER.split(core)  # don't, well-known
    if not all(p.isalpha() for p in parts if p) or not any(parts):
        return False
    letters = "".join(parts)
    if not (letters.islower() or letters.isupper() or letters.istitle()):
        # camelCase identifiers (getValue, iPhone) are words; random case flips are not.
        flips = sum(a.islower() != b.islower() for a, b in itertools.pairwise(letters))
        if flips > CASE_FLIPS:
            return False
    if ASCII_LETTERS.fullmatch(letters) and len(letters) > VOWELLESS_LETTERS:
        return any(c in VOWELS for c in letters)
    return True


def _is_broken_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category in BROKEN_CATEGORIES or char in ("\ufffd", HYPHEN_MARK)


def readable_share(words: Iterable[str]) -> tuple[float, int]:
    """(share of the words that look like words, number of words) for a page's words.

    Tokens of punctuation and symbols only (dot leaders, rules, ASCII art) are
    not words and are not counted. A token with a control, private-use or
    unassigned character, or the replacement character, is never readable.
    """
    total = readable = 0
    for token in words:
        token = token.replace(HYPHEN_MARK, "")
        if token.isascii():
            broken = ASCII_BROKEN.search(token) is not None
        else:
            broken = any(_is_broken_char(c) for c in token)
        if not broken and ALNUM.search(token) is None:
            continue
        total += 1
        if not broken and _is_word(token):
            readable += 1
    return (readable / total if total else 1.0), total


def is_unreadable(words: Iterable[str]) -> bool:
    """A page's text layer that is gibberish: enough words, and most of them not words.

    A page of many words is judged on an even sample of :data:`SAMPLE_WORDS` of them.
    """
    tokens = list(words)
    step = max(1, len(tokens) // SAMPLE_WORDS)
    share, total = readable_share(tokens[::step])
    return total >= MIN_WORDS_TO_JUDGE and share < MIN_READABLE_SHARE


# -- hyphenation ----------------------------------------------------------------------------


def vocabulary(texts: Iterable[str]) -> Counter[str]:
    """How often each word (hyphenated compounds whole, case folded) occurs in the texts.

    Marked line-end breaks are not counted: they are what the vocabulary judges.
    """
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(TOKEN.findall(MARKED_BREAK.sub(" ", text).casefold()))
    return counts


def real_hyphen(first: str, second: str, words: Counter[str]) -> bool:
    """A hyphen at a line end that the document shows is part of the word: the hyphenated
    form occurs in it and the joined one does not, or the second half does not start in
    lower case (``well-known``, ``Anti-Entropy``)."""
    joined, hyphenated = (first + second).casefold(), f"{first}-{second}".casefold()
    return words[joined] == 0 and (words[hyphenated] > 0 or not second[0].islower())


def dehyphenate(text: str, words: Counter[str]) -> str:
    """Resolve each marked line-end break in ``text``: join the halves, or keep the hyphen.

    The hyphen stays where :func:`real_hyphen` says so, given ``words`` (the
    document's vocabulary); otherwise the halves are joined (``produc-tion`` →
    ``production``).
    """

    def resolve(match: re.Match[str]) -> str:
        first, second = match.group(1), match.group(2)
        return f"{first}-{second}" if real_hyphen(first, second, words) else first + second

    return MARKED_BREAK.sub(resolve, text).replace(HYPHEN_MARK, "-")


# -- headings -------------------------------------------------------------------------------


def heading_rejection(text: str) -> str | None:
    """Why a heading candidate is not a heading (a reason in a few words), or None."""
    stripped = text.strip()
    if is_page_number(stripped):
        return "page number"
    if is_page_reference(stripped):
        return "page reference"
    if is_caption(stripped):
        return "caption"
    if not stripped:
        return "empty"
    if is_formula(stripped):
        return "formula"
    if is_garbled(stripped):
        return "unreadable"
    return None


def is_page_number(text: str) -> bool:
    """A page number alone: ``12``, ``iv``, ``Page 3 of 9``, ``- 4 -``."""
    return PAGE_NUMBER.fullmatch(text.strip(PAGE_NUMBER_DASHES)) is not None


def is_page_reference(text: str) -> bool:
    """A line that says where its text goes on or came from: ``(Continued on p. 583)``,
    ``C. A. R. HOARE--cont'd from page 580``."""
    return PAGE_REFERENCE.search(text) is not None


def without_stray_marks(text: str) -> str:
    """A title or heading without a lone mark (``.``, ``,``, ``·``, a quote) between two of
    its words: a speck of dust OCR read, or a stray dot of the layout."""
    return STRAY_MARK.sub(" ", text)


def is_caption(text: str) -> bool:
    """A figure's or table's caption: ``Figure 3:``, ``Table 2.``, ``Fig. 10.``, ``Listing 1:``."""
    return CAPTION.match(text) is not None


def is_formula(text: str) -> bool:
    """A formula: a relation between terms (``a = b``), mostly symbols and few letters, or
    mostly one-character tokens (``x_i + y_j``)."""
    visible = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() and c not in MATH for c in visible)
    maths = sum(c in MATH for c in visible)
    tokens = text.split()
    singles = sum(len(t.strip(TOKEN_BRACKETS)) == 1 for t in tokens)
    if RELATION.search(text) or (
        maths >= FORMULA_SYMBOLS and maths * LETTERS_PER_SYMBOL >= letters
    ):
        return True
    if letters < FORMULA_LETTER_SHARE * len(visible):
        return True
    return len(tokens) >= FORMULA_TOKENS and singles * 2 > len(tokens)


def is_garbled(text: str) -> bool:
    """Text a broken font encoding wrote: a token of letters mixed with symbols
    (``=@?ACBEDFHG``), or words most of which are not words."""
    tokens = text.split()
    share, total = readable_share(tokens)
    return any(_garbled(t) for t in tokens) or (
        total >= UNREADABLE_WORDS and share < MIN_READABLE_SHARE
    )


def _garbled(token: str) -> bool:
    """Letters mixed with two or more symbols inside one token (``=@?ACBEDFHG``)."""
    core = token.strip(EDGE_PUNCTUATION)
    odd = sum(not c.isalnum() and c not in IN_WORD_PUNCTUATION for c in core)
    return odd >= GARBLED_SYMBOLS and any(c.isalpha() for c in core)
