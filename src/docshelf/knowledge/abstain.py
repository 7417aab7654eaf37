"""Whether an offline answer answers: the rules that let ``ask`` say "No passage in your
library answers this" (``Answer.answered``) instead of splicing the nearest sentences.

``answers`` reads the extract's evidence (``answer.extract``): ``coverage``, the largest
share of the question's key terms one candidate sentence holds (each term weighted by its
rarity among the candidates, a term only the sentence's headings hold counting in part),
and ``similarity``, the largest cosine of a candidate sentence to the question. A question
is answered when a sentence holds some of its key words and one comes near it in meaning.
It catches questions far from everything the library holds (a World Cup winner asked of
the Rust book).

``absent_subject`` catches a question about a thing the library never names: the words of
the question that no snippet holds, when together they carry its meaning (leaving them
out moves the question, in the model's meaning, about as far as leaving out its most
telling word does) — "Bloom" in "How does a Bloom filter's false-positive rate depend on
the number of hash functions?" asked of papers that never mention one; "GDPR", "EU" and
"residents" of a vault that names none of them. Words the asker chose where the library
uses others ("clobbering", "tiny") move the question little.

``unquoted`` catches an answer about something else than what the question quoted as code:
the asker wrote `bench` word for word, and no sentence of the answer (nor a heading it
cites) holds it.

``untyped`` catches an answer of the wrong kind: a question asking "how many", "how
much", "how long" or for a measure by its name ("what timeout") answered with sentences
that hold no number, or "in what year" with none that holds a year ("How many worker
threads does Waitress start by default?" answered with how waitress-serve loads the app).

``unnamed`` catches an answer from documents that never name what the question names: a
capitalised word of the question ("Canvas" in "What is the plugin ID of Obsidian's Canvas
core plugin?") that no document the answer cites holds, though another document of the
library does (the answer gave the Outline plugin's ID). For this rule and
``absent_subject``, a cited title's or heading's initials count as its name ("CSP" for
"Communicating Sequential Processes", "CAP" for "… Consistent, Available,
Partition-Tolerant …").

The thresholds were chosen on docqa-dev's 80 answerable and 20 unanswerable questions
(docs/benchmarks/enrichment-and-answers.md, "Abstaining"). A question on the library's
topic whose particular fact it does not state (a near miss: the 2021 winner where the
library names 2022's) is still answered with the nearest sentences — telling those apart
needs the claim itself read, which these rules do not do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from docshelf.search.evidence import verbatim_pattern, words
from docshelf.search.query import STOPWORDS

if TYPE_CHECKING:
    from docshelf.embed import Embedder

# No sentence nearer the question in meaning than this (cosine) answers it, by model: a
# threshold holds for the model it was measured with only. With the packaged model, on
# docqa-dev the answerable questions' nearest sentence is at 0.35 or more, the off-domain
# ones' (a World Cup winner asked of the Rust book) at 0.32 or less.
SIMILARITY = {"all-MiniLM-L6-v2": 0.33}

# The words the library never holds are the question's subject when leaving them out (all
# of them at once) moves the question at least this share of what leaving out its most
# telling word does. On docqa-dev the unanswerable questions' absent words move it 0.81 or
# more of the most ("GDPR", "EU" and "residents" together 1.55; "Bloom" alone 1.00); the
# answerable questions' words the library lacks (the asker's own: "sweets", "oversized",
# "hangout"; "suits" and "tiny" together) 0.67 or less.
SUBJECT = 0.75
# ... unless a sentence comes this near the question (cosine): the library then says the
# thing in words of its own. Unanswerable questions' nearest sentences: 0.64 or less.
SAYS_IT = {"all-MiniLM-L6-v2": 0.70}


def answers(coverage: float, similarity: float | None, model: str | None) -> bool:
    """Whether the best sentences' evidence answers the question (else the library has
    no answer): some sentence holds a key term of it (``coverage`` above 0), and, for a
    ``model`` measured here, one comes near it in meaning (``similarity``)."""
    if coverage <= 0:
        return False
    floor = SIMILARITY.get(model or "")
    return similarity is None or floor is None or similarity >= floor


def _whole(word: str) -> re.Pattern[str]:
    """``word`` as a whole word, in any case."""
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)


def left_out(question: str, word: str) -> str:
    """The question without ``word`` (every occurrence, any case, as a whole word)."""
    return _whole(word).sub(" ", question)


def carried(embedder: Embedder, question: str, words: Sequence[str]) -> float:
    """How much of the question's meaning ``words`` carry together: how far (1 - cosine)
    the question moves when all of them are left out, as a share of the most that
    leaving out one of its words (``telling``) does — 1.0 for its most telling word
    alone, more for words that together carry more than any one."""
    telling = _telling(question)
    without = question
    for word in words:
        without = left_out(without, word)
    vectors = embedder.embed([question, without, *(left_out(question, w) for w in telling)])
    # a move within float error of none is none (a word not in the question moves nothing)
    moves = [m if (m := 1.0 - float(vectors[0] @ v)) > 1e-6 else 0.0 for v in vectors[1:]]
    most = max(moves[1:], default=0.0)
    return moves[0] / most if most > 0 else 0.0


def absent_subject(
    question: str,
    words: Sequence[str],
    unheld: Callable[[list[str]], list[str]],
    embedder: Embedder | None,
    similarity: float | None,
    places: Sequence[str] = (),
) -> list[str]:
    """The words of ``question`` the library never holds when together they are its
    subject (``carried`` at least ``SUBJECT``), as the question spells them; else none.
    ``words`` are the question's content words that none of the answer's sources holds
    (the candidates); ``unheld`` tells which of them no snippet of the library holds (one
    lexical lookup each). A word the titles and headings the answer cites spell out
    (``places``, ``spelled_out``: "CAP") is held. Without a model measured here (its
    ``SAYS_IT``), or with a sentence that near the question (``similarity``), there are
    none."""
    words = [w for w in words if not spelled_out(_as_spelled(question, w), places)]
    near = SAYS_IT.get(embedder.model_id) if embedder is not None else None
    if embedder is None or near is None or not words:
        return []
    if similarity is not None and similarity >= near:
        return []
    absent = unheld(list(words))
    if not absent or carried(embedder, question, absent) < SUBJECT:
        return []
    return [_as_spelled(question, w) for w in absent]


# A code span of the question: `bench`, `rustup target add`.
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def unquoted(question: str, said: str) -> list[str]:
    """The code spans of ``question`` (an identifier or command the asker quoted: `bench`
    in "What opt-level does Cargo use for the `bench` profile?") whose words ``said``,
    the answer's sentences and headings, never holds in order: an answer that never
    mentions what was quoted word for word is about something else."""
    folded = said.casefold()
    out = []
    for span in dict.fromkeys(m.group(1).strip() for m in _CODE_SPAN.finditer(question)):
        pattern = verbatim_pattern(words(span), 1)
        if pattern is not None and not pattern.search(folded):
            out.append(span)
    return out


# What a question asks for when it asks for a quantity or a year, and what an answer
# holding one looks like. A number stands as a word of its own, or is spelled out ("never
# more than four"): a flag's value in an example command ("--test-threads=1") or a digit
# in a name ("x86_64") states no count. A year is four digits from 1000 to 2099 standing
# alone (not "61,000" nor "2.1000").
_ASKS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|long|old|big|large|small|far|fast|high|tall|wide)\b"
    r"|\bwhat\s+(?:share|percentage|proportion|fraction|number)\b"
    # a measure asked for by its name: "What worker timeout…?", "What auto-save delay…?"
    r"|\b(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:timeout|delay|duration|interval|latency|"
    r"size|length|limit|capacity|port)s?\b",
    re.IGNORECASE,
)
_ASKS_YEAR = re.compile(r"\b(?:what|which)\s+year\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w=.-])\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundreds?|thousands?|millions?|billions?|dozens?|"
    r"single|once|twice|thrice|half|double|triple)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![\d.,])(?:1\d|20)\d\d(?![\d]|[.,]\d)")
# an answer's own citation marks, "[2]": not numbers it states
_MARK = re.compile(r"\[\d+\]")


def untyped(question: str, sentences: Sequence[str]) -> str | None:
    """What ``question`` asks for that the answer's ``sentences`` never state: "year"
    ("In what year…?") or "number" ("How many…?", "How long…?", "What share…?", "What
    worker timeout…?"), the sentences holding none; else None. An answer with no number
    to a question asking how many is about something else (the library does not give
    the count)."""
    said = _MARK.sub(" ", " ".join(sentences))
    if _ASKS_YEAR.search(question) and not _YEAR.search(said):
        return "year"
    if _ASKS_NUMBER.search(question) and not _NUMBER.search(said):
        return "number"
    return None


# A capitalised word: a name when it does not open a sentence.
_CAPITALISED = re.compile(r"(?<![\w'\u2019-])[A-Z][\w-]*")
_OPENS = re.compile(r"(?:^|[.?!:;\"\u201c(]\s*)$")


def names(question: str) -> list[str]:
    """The names ``question`` gives: its capitalised words that do not open a sentence
    (nor a quote), stopwords and one-letter words aside, once each, as spelled. A
    question written mostly in capitals ("Flask Application Factory Pattern", typed as a
    title) gives none: there a capital is no sign of a name."""
    typed = re.findall(r"[^\W\d_]+", question)
    if sum(w[0].isupper() for w in typed) * 2 > len(typed):
        return []
    out = []
    for found in _CAPITALISED.finditer(question):
        word = found.group(0).rstrip("-")
        if _OPENS.search(question[: found.start()]) or len(word) < 2:
            continue
        if word.casefold() not in STOPWORDS:
            out.append(word)
    return list(dict.fromkeys(out))


def _initials(text: str) -> str:
    return "".join(w[0] for w in re.findall(r"\w+", text)).upper()


def spelled_out(word: str, places: Sequence[str]) -> bool:
    """Whether ``word``, typed in capitals, is the initials of words in a row of one of
    ``places`` (titles, headings): "CSP" of "Communicating Sequential Processes", "CAP" of
    "Brewer's Conjecture and the Feasibility of Consistent, Available, Partition-Tolerant
    Web Services"."""
    return word.isupper() and any(word in _initials(p) for p in places)


def unnamed(
    question: str,
    places: Sequence[str],
    unheld_there: Callable[[list[str]], list[str]],
    unheld: Callable[[list[str]], list[str]],
) -> list[str]:
    """The names of ``question`` (``names``) that no document the answer cites holds
    (``unheld_there``: one lexical lookup each within those documents) while another
    document of the library does (``unheld``). A word of a cited title or heading
    (``places``: a README's own title, which its text may never say) is held, and so are
    its initials ("CSP" for "Communicating Sequential Processes")."""
    titled = {w.casefold() for p in places for w in re.findall(r"\w+", p)}
    asked = [
        n for n in names(question) if n.casefold() not in titled and not spelled_out(n, places)
    ]
    lacking = unheld_there(asked) if asked else []
    gone = set(unheld(lacking)) if lacking else set()
    return [n for n in lacking if n not in gone]


# -- what an abstention's notice says ------------------------------------------------------


def _listed(words: Sequence[str]) -> str:
    quoted = [f"\u201c{w}\u201d" for w in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def never_mentions(words: Sequence[str]) -> str:
    """The notice of an answer whose question's subject the library never holds."""
    return f"Your library never mentions {_listed(words)}."


def not_mentioned(spans: Sequence[str]) -> str:
    """The notice of an answer whose passages never mention what the question quoted."""
    named = " or ".join(f"`{s}`" for s in spans)
    return f"The closest passages never mention {named}."


def no_such(wanted: str) -> str:
    """The notice of an answer that states no ``wanted`` (a number, a year) the question
    asks for."""
    return f"The closest passages state no {wanted}."


def never_named(names: Sequence[str]) -> str:
    """The notice of an answer whose documents never name what the question names."""
    return f"The closest passages' documents never name {_listed(names)}."


def _as_spelled(question: str, word: str) -> str:
    found = _whole(word).search(question)
    return found.group(0) if found else word


def _telling(question: str) -> list[str]:
    """The words each left out in turn to weigh the question's words: its words of more
    than one character, stopwords aside, once each, case-folded."""
    found = re.findall(r"\w+", question.casefold())
    return list(dict.fromkeys(w for w in found if len(w) > 1 and w not in STOPWORDS))
