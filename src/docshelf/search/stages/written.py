"""Words as written first (every mode): a query word that holds punctuation the lexical
engines split it at (``__name__``, ``--port``, ``Flask(__name__)``, ``s[0]``, ``std::io``,
``app.config``, ``0.15.9``) is looked for as it was typed, case aside. The candidates
whose text holds every such word as written rank before those that only hold its
letters: asked for ``__name__``, a snippet showing ``Flask(__name__)`` comes before one on
naming things, which the engines' words alone cannot tell apart.

A hyphen or an apostrophe inside a word (``opt-level``, ``don't``) or an abbreviation's
dots (``e.g.``) are part of an ordinary word, and a sentence's closing punctuation or a
quote around a word is not the word's: neither makes a word one to read as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from docshelf.search.candidate import Precedence, lift
from docshelf.search.pipeline import Fixed, Search

# What may close a sentence or enclose a word without being part of it.
_AROUND = "\"'`\u201c\u201d\u2018\u2019,;:!?"
# An ordinary word: letters and digits that a hyphen or an apostrophe may join (opt-level,
# don't, X-Frame-Options), or an abbreviation's letters and dots (e.g, U.S).
_ORDINARY = re.compile(r"[^\W_]+(?:[-'\u2019][^\W_]+)*|(?:[^\W\d_]\.)+[^\W\d_]?")


_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"))


def _unwrapped(word: str) -> str:
    """``word`` without brackets around it: a pair around all of it (``(__name__)``), one
    not matched in it (the "(see" of "(see below)"); ``s[0]`` and ``f()`` keep theirs."""
    for opening, closing in _PAIRS:
        if len(word) > 2 and word[0] == opening and word[-1] == closing:
            word = word[1:-1]
        if word.startswith(opening) and closing not in word:
            word = word[1:]
        if word.endswith(closing) and opening not in word:
            word = word[:-1]
    return word


def as_written(query: str) -> list[str]:
    """The words of ``query`` to look for as written (casefolded, each once): those that
    hold a letter or digit and punctuation other than an ordinary word's."""
    found: list[str] = []
    for token in query.split():
        word = _unwrapped(token.strip(_AROUND).removesuffix(".").strip(_AROUND))
        if re.search(r"[^\W_]", word) and not _ORDINARY.fullmatch(word):
            found.append(word.casefold())
    return list(dict.fromkeys(found))


def holds(text: str, words: Sequence[str]) -> bool:
    """Whether ``text`` holds every one of ``words`` as written (case aside), each
    standing on its own: not inside a longer word (``_x`` is not in ``max_x``)."""
    folded = text.casefold()
    for word in words:
        edge = (r"(?<!\w)" if word[0].isalnum() or word[0] == "_" else "") + re.escape(word)
        edge += r"(?!\w)" if word[-1].isalnum() or word[-1] == "_" else ""
        if not re.search(edge, folded):
            return False
    return True


class AsWritten(Fixed):
    name: ClassVar[str] = "written"

    def __call__(self, search: Search) -> None:
        words = as_written(search.parsed.text)
        if not words or not search.candidates:
            return
        texts = search.reader.texts([c.id for c in search.candidates])
        holding = [i for i, text in texts.items() if holds(text, words)]
        lift(search.candidates, holding, Precedence.WRITTEN)
