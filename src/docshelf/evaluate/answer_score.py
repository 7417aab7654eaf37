"""Scoring ``ask`` on a docqa set's answers (``answers.jsonl``): is the answer right, does
it cite the gold place, does it abstain when the collection does not say.

The rules are the set's own (its README, "Answers"), implemented here:

- an answer and a gold phrase are compared as token sequences after normalisation (NFKC,
  case folding, thousands separators out, ``$200`` → ``200 dollar``, ``%`` → ``percent``,
  ``@`` → ``at``, ``&`` → ``and``, ``_`` → ``underscore``, digits split from the letters
  after them, other punctuation a space but a decimal point, number words to digits, a
  light suffix stripper); a phrase matches on token boundaries;
- a ``span`` answer is right when it holds one variant (a string; ``re:`` a regex on the
  raw text; a list all of its items, an inner list any of its strings); a ``summary``
  answer when it holds at least half its key phrases (each a phrase, or a list of
  alternatives);
- cited: right, and one citation is a gold place: the same path, the gold page among the
  cited pages when the gold has one (a citation of pages 3-4 cites page 4, as the search
  eval counts it), the same heading (its last part, markup out, case aside) when it has one.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Asked", "correct", "is_cited", "normalized", "table"]

_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_TENS["ninety"] = 90
NUMBER_WORDS = {word: str(n) for n, word in enumerate(_NUMBERS)} | {
    w: str(n) for w, n in _TENS.items()
}


# The set's light suffix stripper: of a word of letters longer than three, the first of
# these endings it has is replaced, again and again, while at least three letters remain
# ("sherlocking" -> "sherlock", "antibodies" -> "antibody", "home" -> "hom"; a double "s"
# keeps its "s"). Both sides are stripped alike, so only matching matters.
_ENDINGS = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("e", ""))


def _stem(token: str) -> str:
    if len(token) <= 3 or not token.isalpha():
        return token
    while True:
        for ending, becomes in _ENDINGS:
            cut = len(token) - len(ending)
            if token.endswith(ending) and cut + len(becomes) >= 3:
                if ending == "s" and token.endswith("ss"):
                    continue
                token = token[:cut] + becomes
                break
        else:
            return token


def normalized(text: str) -> list[str]:
    """``text`` as the tokens it is compared by."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)  # 1,500 → 1500
    t = re.sub(r"\$\s*(\d[\d.]*)", r"\1 dollar", t)
    for mark, word in (("%", " percent "), ("@", " at "), ("&", " and "), ("_", " underscore ")):
        t = t.replace(mark, word)
    t = re.sub(r"(\d)([^\W\d_])", r"\1 \2", t)  # 1mb → 1 mb
    t = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", t)  # a point between digits stays
    t = re.sub(r"[^\w.]+", " ", t)
    return [_stem(NUMBER_WORDS.get(w, w)) for w in t.split()]


def _holds(answer: Sequence[str], phrase: str) -> bool:
    wanted = normalized(phrase)
    n = len(wanted)
    return bool(wanted) and any(list(answer[i : i + n]) == wanted for i in range(len(answer)))


def _variant(answer_text: str, tokens: Sequence[str], variant: Any) -> bool:
    if isinstance(variant, list):  # all of the items; an inner list: any of its strings
        return all(
            any(_variant(answer_text, tokens, v) for v in item)
            if isinstance(item, list)
            else _variant(answer_text, tokens, item)
            for item in variant
        )
    text = str(variant)
    if text.startswith("re:"):
        return re.search(text[3:], answer_text, re.IGNORECASE) is not None
    return _holds(tokens, text)


def correct(answer_text: str, gold: dict[str, Any]) -> bool:
    """Whether ``answer_text`` states ``gold`` (an ``answers.jsonl`` line)."""
    tokens = normalized(answer_text)
    if gold.get("answer_type") == "summary":
        phrases = gold.get("key_phrases") or []
        found = sum(
            any(_holds(tokens, p) for p in ([k] if isinstance(k, str) else k)) for k in phrases
        )
        return bool(phrases) and found * 2 >= len(phrases)
    return any(_variant(answer_text, tokens, v) for v in gold.get("variants") or [])


def _heading(text: str | None) -> str:
    last = (text or "").split(" > ")[-1]
    last = re.sub(r"\{[^}]*\}\s*$", "", last.lstrip("#"))
    last = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", last)
    last = re.sub(r"[`*_]|[^\w\s.,:;!?'\"()/-]", "", last)
    return " ".join(last.split()).casefold()


def is_cited(citations: Iterable[dict[str, Any]], places: Iterable[dict[str, Any]]) -> bool:
    """Whether one citation (``path``, ``heading``, ``page``, ``page_end``) is one of the
    gold places."""
    cites = list(citations)
    for place in places:
        for c in cites:
            if c.get("path") != place.get("path"):
                continue
            page, last = c.get("page"), c.get("page_end") or c.get("page")
            if place.get("page") is not None and not (
                page is not None and page <= place["page"] <= last
            ):
                continue
            if place.get("heading") and _heading(c.get("heading")) != _heading(place["heading"]):
                continue
            return True
    return False


@dataclass(frozen=True)
class Asked:
    """One question asked: its answer scored."""

    id: str
    collection: str
    kind: str  # a question kind, or an unanswerable one's (near-miss, …)
    answerable: bool
    answered: bool
    correct: bool = False
    cited: bool = False
    answer: str = ""
    citations: tuple[dict[str, Any], ...] = ()  # path, heading, page (and page_end)

    def with_text(self, answer: str, citations: tuple[dict[str, Any], ...]) -> Asked:
        return dataclasses.replace(self, answer=answer, citations=citations)

    def as_run_line(self) -> dict[str, Any]:
        """The question as a run file of the set's own scorer has it, with its scores."""
        return {
            "id": self.id,
            "answered": self.answered,
            "answer": self.answer,
            "citations": list(self.citations),
            "correct": self.correct,
            "cited": self.cited,
        }


def _row(group: Sequence[Asked]) -> dict[str, Any]:
    sure = [a for a in group if a.answerable]
    not_in = [a for a in group if not a.answerable]
    out: dict[str, Any] = {"answerable": len(sure), "unanswerable": len(not_in)}
    if sure:
        n = len(sure)
        out["accuracy"] = round(sum(a.correct for a in sure) / n, 4)
        out["cited_accuracy"] = round(sum(a.cited for a in sure) / n, 4)
        out["wrong"] = round(sum(a.answered and not a.correct for a in sure) / n, 4)
        out["false_abstention"] = round(sum(not a.answered for a in sure) / n, 4)
    if not_in:
        out["abstention_recall"] = round(sum(not a.answered for a in not_in) / len(not_in), 4)
        out["false_answer"] = round(sum(a.answered for a in not_in) / len(not_in), 4)
    return out


def table(asked: Sequence[Asked]) -> dict[str, Any]:
    """The scores of every question, per collection and per kind (answerable kinds and
    unanswerable ones apart)."""
    collections = sorted({a.collection for a in asked})
    kinds = sorted({a.kind for a in asked})
    return {
        "all": _row(asked),
        "collection": {c: _row([a for a in asked if a.collection == c]) for c in collections},
        "kind": {k: _row([a for a in asked if a.kind == k]) for k in kinds},
    }
