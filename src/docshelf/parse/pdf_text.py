"""Judging and mending a PDF's extracted text: pure functions of strings, no PDF library.

- :func:`readable_share`: the share of a page's words that look like words. A
  text layer written with a broken font encoding (a Type 3 bitmap font without
  a Unicode map, a subset font whose codes were never mapped) extracts as
  ``78&:9;02.4<=3`` or as control characters; such a page is treated like a
  scanned one (:func:`is_unreadable`).
- :func:`dehyphenate`: a word broken at a line end (``produc-`` / ``tion``)
  is joined, unless the document itself shows the hyphen is real: the
  hyphenated form occurs elsewhere in it and the joined form does not
  (``well-known``).
- :func:`heading_rejection`: why a short, large line is not a heading — a
  figure or table caption, a formula, a page number — or None.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "HYPHEN_MARK",
    "MIN_WORDS_TO_JUDGE",
    "SAMPLE_WORDS",
    "dehyphenate",
    "heading_rejection",
    "is_unreadable",
    "readable_share",
    "vocabulary",
]

# Where a word was broken at a line end. PDFium itself reports a line-end hyphen as
# U+FFFE; the layout code marks a literal "-" at a line end the same way.
HYPHEN_MARK = "\ufffe"
MIN_WORDS_TO_JUDGE = 12  # fewer words than this: too little text to call it unreadable
SAMPLE_WORDS = 200  # a page is judged on at most about this many of its words
_MIN_READABLE_SHARE = 0.4

_EDGE_PUNCTUATION = (
    "\"'()[]{}<>.,;:!?*%/-"
    "\u00ab\u00bb\u201c\u201d\u2018\u2019\u201e\u201a\u2020\u2021\u00a7\u00b6\u2026\u2013\u2014"
)
_VOWELS = frozenset("aeiouyAEIOUY")
_ASCII_LETTERS = re.compile(r"[A-Za-z]+")
_NUMBER = re.compile(r"[+-]?\d[\d.,:/]*[a-zA-Z%]{0,3}")


# The common case, decided by one match: an ASCII word in one case pattern, with a vowel
# when longer than three letters, between edge punctuation.
_PLAIN_WORD = re.compile(
    r"[(\[\"'\u201c\u2018]*"
    r"(?:[a-z]{1,3}|[A-Z][a-z]{0,2}|[A-Z]{1,3}|(?=[A-Za-z]*[aeiouyAEIOUY])(?:[a-z]+|[A-Z][a-z]+|[A-Z]+))"
    r"(?:['\u2019-][a-z]+)*[)\]\"'\u201d\u2019.,;:!?]*"
)
_ASCII_BROKEN = re.compile("[\x00-\x1f\x7f]")
_ALNUM = re.compile(r"[^\W_]")


def _is_word(token: str) -> bool:
    """A token that reads as a word or a number (edge punctuation aside)."""
    if _PLAIN_WORD.fullmatch(token):
        return True
    core = token.strip(_EDGE_PUNCTUATION)
    if not core:
        return False
    if _NUMBER.fullmatch(core):
        return True
    parts = re.split(r"['\u2019-]", core)  # don't, well-known
    if not all(p.isalpha() for p in parts if p) or not any(parts):
        return False
    letters = "".join(parts)
    if not (letters.islower() or letters.isupper() or letters.istitle()):
        # camelCase identifiers (getValue, iPhone) are words; random case flips are not.
        flips = sum(a.islower() != b.islower() for a, b in itertools.pairwise(letters))
        if flips > 2:
            return False
    if _ASCII_LETTERS.fullmatch(letters) and len(letters) > 3:
        return any(c in _VOWELS for c in letters)
    return True


def _is_broken_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cc", "Co", "Cn", "Cs") or char in ("\ufffd", HYPHEN_MARK)


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
            broken = _ASCII_BROKEN.search(token) is not None
        else:
            broken = any(_is_broken_char(c) for c in token)
        if not broken and _ALNUM.search(token) is None:
            continue
        total += 1
        if not broken and _is_word(token):
            readable += 1
    return (readable / total if total else 1.0), total


def is_unreadable(words: Iterable[str]) -> bool:
    """True when a page's text layer is gibberish: enough words, and most of them not words.

    A page of many words is judged on an even sample of :data:`SAMPLE_WORDS` of them.
    """
    tokens = list(words)
    step = max(1, len(tokens) // SAMPLE_WORDS)
    share, total = readable_share(tokens[::step])
    return total >= MIN_WORDS_TO_JUDGE and share < _MIN_READABLE_SHARE


# -- hyphenation ----------------------------------------------------------------------------

_MARKED = re.compile(rf"(\w+){HYPHEN_MARK}(\w+)")
_TOKEN = re.compile(r"\w+(?:[-'\u2019]\w+)*")


def vocabulary(texts: Iterable[str]) -> Counter[str]:
    """How often each word (hyphenated compounds whole, case folded) occurs in the texts.

    Marked line-end breaks are not counted: they are what the vocabulary judges.
    """
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_TOKEN.findall(_MARKED.sub(" ", text).casefold()))
    return counts


def dehyphenate(text: str, words: Counter[str]) -> str:
    """Resolve each marked line-end break in ``text``: join the halves, or keep the hyphen.

    The hyphen stays when the hyphenated form occurs in ``words`` (the
    document's vocabulary) and the joined form does not, or when the second
    half does not start with a lower-case letter (``Anti-Entropy``, ``IPv-6``).
    Otherwise the halves are joined (``produc-tion`` → ``production``).
    """

    def resolve(match: re.Match[str]) -> str:
        first, second = match.group(1), match.group(2)
        joined, hyphenated = (first + second).casefold(), f"{first}-{second}".casefold()
        if words[joined] == 0 and (words[hyphenated] > 0 or not second[0].islower()):
            return f"{first}-{second}"
        return first + second

    return _MARKED.sub(resolve, text).replace(HYPHEN_MARK, "-")


# -- headings -------------------------------------------------------------------------------

_CAPTION = re.compile(
    r"(?:fig(?:ure)?|tab(?:le)?|listing|algorithm|chart|plate|exhibit|scheme|example)\.?"
    r"\s*[\dIVXivx]+[a-z]?(?:\.\d+)*\s*[:.|\u2014\u2013-]",
    re.I,
)
_PAGE_NUMBER = re.compile(r"(?:page\s+)?[\divxlc]{1,6}(?:\s*(?:of|/)\s*\d+)?", re.I)
_RELATION = re.compile("\\S\\s*[=\u2264\u2265\u2260\u2248\u2208\u21d2\u2192]\\s*\\S")
# Operators and relations (not Greek letters: they are words in Greek text).
_MATH = frozenset(
    "=<>+*/^_{}|~\u2211\u220f\u222b\u221a\u2264\u2265\u2260\u2248\u00b1\u00d7\u00f7"
    "\u2208\u2209\u2282\u2286\u222a\u2229\u2200\u2203\u2192\u2190\u2194\u21d2\u21d4"
    "\u221e\u2202\u2207"
)


def heading_rejection(text: str) -> str | None:
    """Why a heading candidate is not a heading (a reason in a few words), or None."""
    stripped = text.strip()
    if _PAGE_NUMBER.fullmatch(stripped.strip(" -\u2013")):
        return "page number"
    if _CAPTION.match(stripped):
        return "caption"
    visible = [c for c in stripped if not c.isspace()]
    if not visible:
        return "empty"
    letters = sum(c.isalpha() and c not in _MATH for c in visible)
    maths = sum(c in _MATH for c in visible)
    tokens = stripped.split()
    singles = sum(len(t.strip("()[],.;:")) == 1 for t in tokens)
    if _RELATION.search(stripped) or (maths >= 2 and maths * 4 >= letters):
        return "formula"
    if letters < 0.5 * len(visible):
        return "formula"
    if len(tokens) >= 4 and singles * 2 > len(tokens):
        return "formula"
    share, total = readable_share(tokens)
    if any(_garbled(t) for t in tokens) or (total >= 2 and share < _MIN_READABLE_SHARE):
        return "unreadable"
    return None


def _garbled(token: str) -> bool:
    """Letters mixed with two or more symbols inside one token (``=@?ACBEDFHG``)."""
    core = token.strip(_EDGE_PUNCTUATION)
    odd = sum(not c.isalnum() and c not in "'\u2019-." for c in core)
    return odd >= 2 and any(c.isalpha() for c in core)
