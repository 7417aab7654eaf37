"""Grounded answers: retrieve, answer with inline ``[n]`` citations, verify.

With an LLM, the model answers from numbered sources (hits expanded to their
parent sections within a token budget). Every ``[n]`` is then checked against
the sources actually given: an answer citing something that was not retrieved
is regenerated once; then only the sentences that cite sources given and say
what those sources say stand (see :func:`grounded`) — a broken citation or an
unsupported claim never reaches the user. Without an LLM (or when it fails),
the answer is extractive: the sentences of the cited snippets that hold the
question's key words, as plain text (see :func:`plain_sentences`), in the order
they read in their source, sources in rank order, numbered ``[1]``…``[n]``
without gaps (see :func:`extract`); streamed, one sentence per piece. The
result always names its mode.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docshelf import telemetry
from docshelf.errors import InvalidInput, Unavailable
from docshelf.knowledge.abstain import (
    absent_subject,
    answers,
    never_mentions,
    never_named,
    no_such,
    not_mentioned,
    unnamed,
    unquoted,
    untyped,
)
from docshelf.knowledge.sentences import (
    Candidate,
    Source,
    known_item,
    marks_out,
    read_on,
    sentences_of,
    spread,
    with_block,
    with_next,
)
from docshelf.llm import LLM, Message
from docshelf.model import Citation, Hit, InnerHeading, PageBreak
from docshelf.plaintext import SENTENCE_BOUNDARY
from docshelf.search.evidence import stem
from docshelf.search.query import lexical_terms, parse_query

if TYPE_CHECKING:
    from docshelf.search.retriever import Retriever
    from docshelf.store.base import SearchFilters

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")

SYSTEM = (
    "You answer questions using only the numbered sources you are given. "
    "Cite every claim with the number of its source in square brackets, like [1] or [2][3]. "
    "Cite only numbers that appear in the sources. If the sources do not answer the "
    "question, say so briefly. Answer concisely."
)
# The most an answer may take (tokens): a concise cited answer needs far fewer; a model that
# rambles on (a small local one does) stops here, not at the server's 512 or more.
ANSWER_TOKENS = 320


@dataclass(frozen=True)
class AnswerCitation:
    n: int
    chunk_id: str
    citation: Citation  # the hit's: file, heading path, page

    @property
    def label(self) -> str:
        return self.citation.label

    @classmethod
    def of(cls, n: int, hit: Hit) -> AnswerCitation:
        return cls(n, hit.chunk.id, hit.citation)


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    mode: str  # "llm" | "extractive"
    citations: list[AnswerCitation]
    notice: str | None = None
    # False: no passage of the library answers it (knowledge/abstain.py); the answer says
    # so and its citations are the closest passages, not an answer's sources
    answered: bool = True
    conversation: str | None = None  # the conversation it is a turn of (conversations.py)


def cited_numbers(text: str) -> list[int]:
    """Every number cited in ``text`` (``[2]``, ``[1, 3]``), in order of appearance."""
    return [int(n) for group in _CITE.findall(text) for n in group.split(",")]


def gather_sources(
    retriever: Retriever, hits: Sequence[Hit], budget_tokens: int, *, each_hit: bool = False
) -> list[Source]:
    """One source per hit (for a model, hits sharing a section share one), expanded to
    the parent section while the token budget lasts, else the snippet itself. With
    ``each_hit`` (an offline answer, which reads each hit's snippet and the snippets
    beside it, and no model's context), every hit is a source, with its section's text
    and no budget."""
    sources: list[Source] = []
    seen_sections: set[str] = set()
    used = 0
    budget = math.inf if each_hit else budget_tokens
    read = [read_on(retriever, hit) for hit in hits]
    # the hits' section chunks (of their own documents, which the caller may read), at once
    wanted = list(dict.fromkeys(h.chunk.parent_id for h in read if h.chunk.parent_id))
    parents = {c.id: c for c in retriever.store.get_chunks(wanted)} if wanted else {}
    for hit in read:
        section_id = hit.chunk.id if each_hit else hit.chunk.parent_id or hit.chunk.id
        if section_id in seen_sections:
            continue
        seen_sections.add(section_id)
        text = hit.chunk.text
        cost = hit.chunk.token_count
        section = parents.get(hit.chunk.parent_id or "")
        if section is not None and used + section.token_count <= budget:
            text, cost = section.text, section.token_count
        if used + cost > budget and sources:
            break
        used += cost
        sources.append(Source(len(sources) + 1, hit, marks_out(hit, text)))
    return sources


def _prompt(question: str, sources: Sequence[Source], strict: bool) -> list[Message]:
    blocks = "\n\n".join(f"[{s.n}] ({s.hit.citation.label})\n{s.text}" for s in sources)
    note = (
        f"\n\nYour previous answer cited sources that do not exist. Use only [1] to "
        f"[{len(sources)}]."
        if strict
        else ""
    )
    return [
        Message("system", SYSTEM),
        Message("user", f"Sources:\n\n{blocks}\n\nQuestion: {question}{note}"),
    ]


def _citations(text: str, sources: Sequence[Source]) -> list[AnswerCitation]:
    by_n = {s.n: s for s in sources}
    cited = dict.fromkeys(n for n in cited_numbers(text) if n in by_n)
    return [AnswerCitation.of(n, by_n[n].hit) for n in sorted(cited)]


def llm_answer(llm: LLM, question: str, sources: Sequence[Source]) -> str | None:
    """The model's answer, its sentences each :func:`grounded` (the model asked again
    once when it cited a source it was not given), or None if none is."""
    valid = {s.n for s in sources}
    text = ""
    with telemetry.llm_call("answer", "ask"):
        for strict in (False, True):
            prompt = _prompt(question, sources, strict)
            text = llm.complete(prompt, max_tokens=ANSWER_TOKENS).text.strip()
            if set(cited_numbers(text)) <= valid:
                break
    kept = [s.strip() for s in SENTENCE_BOUNDARY.split(text) if grounded(s, sources)]
    return " ".join(kept) or None


# A model's sentence stands when most of what it says is in what it cites: at least this
# share of its key words (stemmed, as the offline answer reads a question) is in the text
# of the sources it cites. It keeps a paraphrase; it drops an invented fact, a sentence
# that echoes the prompt, and one citing nothing.
SUPPORT = 0.5


def grounded(sentence: str, sources: Sequence[Source]) -> bool:
    """Whether an LLM's ``sentence`` cites a source, only sources it was given, and
    says what they say (``SUPPORT``)."""
    by_n = {s.n: s.text for s in sources}
    numbers = set(cited_numbers(sentence))
    if not numbers or not numbers <= by_n.keys():
        return False
    words = set(key_terms(_CITE.sub(" ", sentence)))
    held = {_stem(w) for n in numbers for w in re.findall(r"\w+", by_n[n])}
    return len(words & held) >= SUPPORT * len(words)


# -- the offline (extractive) answer ------------------------------------------------------------
# Words of a question that say what kind of answer is wanted, not what it is about.
_QUESTION_WORDS = frozenset(
    [
        *("can", "could", "should", "would", "may", "might", "i", "me", "my", "we", "our"),
        *("you", "your", "they", "them", "their", "there", "about", "explain", "describe"),
        *("tell", "mean", "means", "meant", "define", "definition"),
        # function words: they say how, not what
        *("without", "within", "into", "onto", "over", "under", "between", "through"),
        # a phrasal verb's particle ("slowing Obsidian down", "set it up"): its verb says what
        *("up", "down", "out", "off"),
        *("during", "before", "after", "than", "then", "also", "not", "no", "any", "some"),
        *("all", "each", "other", "such", "so", "if", "but", "very", "just", "only"),
        *("much", "many", "there", "here", "these", "those", "he", "she", "his", "her"),
    ]
)
# "What is X?", "What are the Xs in Y?": X is what a defining sentence is about.
_DEFINITION = re.compile(
    r"^\s*(?:what|who)\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?(.+?)"
    r"(?:\s+(?:in|of|for|on|at|with|from|about)\s+.*)?\s*\??\s*$",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A word's English (Snowball) stem, the one search compares words by: ``tablets``
    matches ``tablet`` and ``becomes`` ``become``, ``table`` not ``tablet``."""
    return stem(word.casefold())


def key_terms(question: str) -> list[str]:
    """The question's words that say what it is about (stemmed), in order."""
    terms = [t for t in lexical_terms(question) if t not in _QUESTION_WORDS]
    return list(dict.fromkeys(_stem(t) for t in terms))


# A sentence scoring below this share of the best one is not part of the answer.
KEEP = 0.75
# A sentence is read under the headings of its snippet: a key word of the question that
# only those headings hold counts for it at this share of its weight ("The default type
# is f64" under "Floating-Point Types", asked which floating-point type is the default).
# docs/benchmarks/enrichment-and-answers.md, "Extractive answers read sentences under their
# headings".
HEADING_SHARE = 0.5


def _heading_stems(source: Source) -> set[str]:
    return {_stem(w) for h in source.hit.citation.heading_path for w in re.findall(r"\w+", h)}


@dataclass(frozen=True)
class Extract:
    """An extractive answer: its sentences (each ending in its ``[n]``) in reading
    order, and the citations they use, numbered 1..n in order of first use."""

    sentences: list[str]
    citations: list[AnswerCitation]
    weak: bool = False  # no sentence holds the question's key terms
    # the evidence of the best sentences: the largest share of the question's key terms
    # one sentence holds (rarer terms weigh more), and the largest cosine similarity of a
    # sentence to the question (None without an embedder)
    coverage: float = 0.0
    similarity: float | None = None
    # the stems the candidate sentences and their sources' headings hold
    held: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def extract(
    retriever: Retriever,
    question: str,
    sources: Sequence[Source],
    sentences: int = 3,
    renumber: bool = True,
) -> Extract:
    """The sentences of the hits that answer ``question``, each with its citation.

    The candidates are knowledge/sentences.py's (each snippet's sentences, with those of
    the snippets beside it in the same place). A question that names its first hit's
    heading or quotes a line of it is answered by the section's opening or the line's
    context (``sentences.known_item``). Otherwise a sentence is scored by the share of the
    question's key terms it holds (each term weighted by how rare it is among the
    candidates, so a word on every line counts little; one only its snippet's headings
    hold counts ``HEADING_SHARE``) and a bonus when it defines what a "what is X?"
    question asks about; only sentences with at least ``KEEP`` of the best such score
    answer (so an answer about Raft does not end with a sentence about bread, nor a
    tablet's definition come with a sentence about the master). Among those, the
    embedder's cosine similarity to the question (when there is one) adds to the
    ranking; at most two per source. With no sentence holding a key word, the most
    similar one alone is given, marked weak. The kept sentences read as in their
    source, sources in retrieval order. With ``renumber``, sources are numbered 1..n in
    order of first use (the citations say which hit each is); without, they keep their
    numbers (when a ``sources`` event already named them).
    Deterministic."""
    candidates = sentences_of(retriever, sources)
    if not candidates:
        return Extract([], [], weak=True)
    terms = key_terms(question)
    stems = [{_stem(w) for w in re.findall(r"\w+", c[2])} for c in candidates]
    weight = {t: math.log(1 + len(candidates) / (1 + sum(t in ws for ws in stems))) for t in terms}
    total = sum(weight.values()) or 1.0
    heads = {s.n: _heading_stems(s) for s in sources}
    coverage = [
        sum(weight[t] * (1.0 if t in ws else HEADING_SHARE * (t in heads[c[0].n])) for t in terms)
        / total
        for ws, c in zip(stems, candidates, strict=True)
    ]
    scores = list(coverage)
    defined = _DEFINITION.match(question)
    focus = [_stem(w) for w in re.findall(r"\w+", defined.group(1))] if defined else []
    if focus:  # "X is …", "Xs are …": the sentence that defines what was asked about
        defines = re.compile(
            r"\b"
            + r"\w*\s+".join(re.escape(w) for w in focus)
            + r"\w*\s+(is|are|was|were|means|refers|consists)\b",
            re.IGNORECASE,
        )
        scores = [
            x + (1.0 if defines.search(c[2]) else 0.0)
            for x, c in zip(scores, candidates, strict=True)
        ]
    about = list(scores)  # what the sentence says of the question's own words
    embedder = retriever.embedder
    best_sim: float | None = None
    if embedder is not None:  # beside the snippet, only a sentence with a key word is read
        read = [i for i, c in enumerate(candidates) if c[3] or about[i] > 0]
        read = read or list(range(len(candidates)))
        vectors = embedder.embed([question] + [candidates[i][2] for i in read])
        sims = [0.0] * len(candidates)
        for i, v in zip(read, vectors[1:] @ vectors[0], strict=True):
            sims[i] = float(v)
        scores = [x + v for x, v in zip(scores, sims, strict=True)]
        best_sim = max(sims[i] for i in read)
    ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    best_about = max(about)
    # the most similar sentences first, among those holding the key words; without the
    # key words only the most similar sentence answers
    eligible = [i for i in ranked if about[i] >= best_about * KEEP]
    chosen = spread(candidates, eligible[:1] if best_about == 0 else eligible, sentences)
    known = known_item(question, candidates, sources[0], sentences)
    if known:
        chosen = known
    elif best_about > 0:  # a weak answer is the one nearest sentence
        chosen = with_next(candidates, chosen, sentences)
    chosen.sort(key=lambda i: (candidates[i][0].n, candidates[i][1]))
    out, citations = _numbered([candidates[i] for i in chosen], renumber)
    return Extract(
        out,
        citations,
        weak=max(coverage) == 0,
        coverage=max(coverage),
        similarity=best_sim,
        held=frozenset().union(*stems, *heads.values()),
    )


def _numbered(
    chosen: Sequence[Candidate], renumber: bool
) -> tuple[list[str], list[AnswerCitation]]:
    """The chosen sentences, each ending in its ``[n]``, and their citations. Renumbered,
    a sentence under another heading of its snippet than the one its source is cited
    under, or on another of its pages, is cited there (a number of its own); otherwise,
    sources keep their numbers and places (a ``sources`` event named them)."""
    # by source and place: an inner heading's path, a page, or None for the source's own
    numbers: dict[tuple[int, tuple[str, ...] | PageBreak | None], AnswerCitation] = {}
    out: list[str] = []
    # what was said, and the lists and code lead-ins brought: no sentence, and no item of a
    # list brought, is said twice (a reference page repeats "If it is set to None, …")
    told: set[str] = set()
    brought = ""
    for source, at, sentence, _, under in chosen:
        if sentence in told or sentence.rstrip(".;,") in brought:
            continue
        told.add(sentence)
        said = with_block(source, at, sentence)
        brought += said[len(sentence) :]
        place = under if renumber else None
        key = (source.n, place.heading_path if isinstance(place, InnerHeading) else place)
        if key not in numbers:
            hit = source.hit
            if place is not None:
                cited = Citation.for_chunk(hit.chunk, hit.document, place)
                hit = dataclasses.replace(hit, citation=cited)
            numbers[key] = AnswerCitation.of(len(numbers) + 1 if renumber else source.n, hit)
        out.append(f"{said} [{numbers[key].n}]")
    return out, sorted(numbers.values(), key=lambda c: c.n)


NO_MATCH = "No document matched the question."
NOT_ANSWERED = "No passage in your library answers this; the closest are:"


def _said(found: Extract) -> str:
    """What an answer says: its sentences and the headings it cites them under."""
    heads = (h for c in found.citations for h in c.citation.heading_path)
    return " ".join([*found.sentences, *heads])


def _unsourced(question: str, held: frozenset[str]) -> list[str]:
    """The question's content words (case-folded, as typed) whose stems are not ``held``
    (by the answer's candidate sentences)."""
    asked = (t for t in lexical_terms(question) if t not in _QUESTION_WORDS and len(t) > 1)
    return [w for w in asked if _stem(w) not in held]


def _why_not(
    retriever: Retriever,
    question: str,
    sources: Sequence[Source],
    found: Extract,
    user_id: str | None,
    filters: SearchFilters | None,
) -> Iterator[str]:
    """Why ``found`` does not answer ``question`` though a sentence holds its words and
    comes near it (knowledge/abstain.py), each reason's notice in turn, each rule read
    only when the ones before found none."""
    unheld = functools.partial(retriever.unheld, user_id=user_id, filters=filters)
    asked = parse_query(question).text  # its words, not its filters
    words = _unsourced(asked, found.held)
    embedder = retriever.embedder
    places = [p for c in found.citations for p in (c.citation.title, *c.citation.heading_path)]
    if subject := absent_subject(asked, words, unheld, embedder, found.similarity, places):
        yield never_mentions(subject)
    if quoted := unquoted(question, _said(found)):
        yield not_mentioned(quoted)
    if wanted := untyped(asked, found.sentences):
        yield no_such(wanted)
    # the names of the question, looked up within the documents the answer cites
    cited = {c.chunk_id for c in found.citations}
    docs = tuple(dict.fromkeys(s.hit.document.id for s in sources if s.hit.chunk.id in cited))
    from docshelf.store.base import SearchFilters

    there = dataclasses.replace(filters or SearchFilters(), document_ids=docs)
    within = functools.partial(retriever.unheld, user_id=user_id, filters=there)
    if docs and (named := unnamed(asked, places, within, unheld)):
        yield never_named(named)


def _extractive(
    retriever: Retriever,
    question: str,
    sources: Sequence[Source],
    notice: str | None,
    renumber: bool = True,
    *,
    user_id: str | None = None,
    filters: SearchFilters | None = None,
) -> tuple[Extract, Answer]:
    found = extract(retriever, question, sources, renumber=renumber)
    embedder = retriever.embedder
    model = embedder.model_id if embedder is not None else None
    answered = bool(found.sentences) and answers(found.coverage, found.similarity, model)
    if answered and (
        why := next(_why_not(retriever, question, sources, found, user_id, filters), None)
    ):
        answered, notice = False, notice or why
    if not answered:
        text = f"{NOT_ANSWERED} {found.text}".strip()
        return found, Answer(question, text, "extractive", found.citations, notice, False)
    return found, Answer(question, found.text, "extractive", found.citations, notice)


def ask(
    retriever: Retriever,
    question: str,
    *,
    limit: int = 5,
    user_id: str | None = None,
    llm: LLM | None = None,
    budget_tokens: int = 3000,
    filters: SearchFilters | None = None,
) -> Answer:
    result = retriever.search(question, limit=limit, user_id=user_id, filters=filters)
    if not result.hits:
        return Answer(question, NO_MATCH, "extractive", [], answered=False)
    sources = gather_sources(retriever, result.hits, budget_tokens, each_hit=llm is None)
    notice = None
    if llm is not None:
        try:
            text = llm_answer(llm, question, sources)
        except Unavailable as exc:
            text, notice = None, f"The LLM failed ({exc.message}); this answer is extractive"
        if text:
            return Answer(question, text, "llm", _citations(text, sources))
        notice = notice or "The LLM's answer could not be grounded; this answer is extractive"
    return _extractive(retriever, question, sources, notice, user_id=user_id, filters=filters)[1]


# -- streaming -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerPiece:
    """One step of a streamed answer: the ``sources`` first, then verified ``text``
    (whole sentences), then ``done`` with the final answer."""

    kind: str  # "sources" | "text" | "done"
    text: str = ""
    sources: list[AnswerCitation] = field(default_factory=list)
    answer: Answer | None = None


def sentences_as_they_come(pieces: Iterable[str]) -> Iterator[str]:
    """Whole sentences out of a stream of text pieces, each as soon as it is complete."""
    buffer = ""
    for piece in pieces:
        buffer += piece
        parts = SENTENCE_BOUNDARY.split(buffer)
        for sentence in parts[:-1]:
            if sentence.strip():
                yield sentence.strip()
        buffer = parts[-1]
    if buffer.strip():
        yield buffer.strip()


def ask_stream(
    retriever: Retriever,
    question: str,
    *,
    limit: int = 5,
    user_id: str | None = None,
    llm: LLM | None = None,
    budget_tokens: int = 3000,
    filters: SearchFilters | None = None,
) -> Iterator[AnswerPiece]:
    """``ask``, delivered as it is written. Each sentence is checked before it is sent:
    one citing a source that was not retrieved is left out (it cannot be regenerated
    once the sentences around it are out), so a broken citation never reaches the user.
    An empty question is refused here, before the first piece is asked for."""
    if not question or not question.strip():
        raise InvalidInput("The question is empty")
    return _stream(retriever, question, limit, user_id, llm, budget_tokens, filters)


def _stream(
    retriever: Retriever,
    question: str,
    limit: int,
    user_id: str | None,
    llm: LLM | None,
    budget_tokens: int,
    filters: SearchFilters | None = None,
) -> Iterator[AnswerPiece]:
    result = retriever.search(question, limit=limit, user_id=user_id, filters=filters)
    if not result.hits:
        yield AnswerPiece(
            "done", answer=Answer(question, NO_MATCH, "extractive", [], answered=False)
        )
        return
    sources = gather_sources(retriever, result.hits, budget_tokens, each_hit=llm is None)
    if llm is None:  # offline: the sources named are the ones the sentences cite, 1..n
        found, answer = _extractive(
            retriever, question, sources, None, user_id=user_id, filters=filters
        )
        yield AnswerPiece("sources", sources=found.citations)
        said = [] if answer.answered else [NOT_ANSWERED]
        for i, sentence in enumerate([*said, *found.sentences]):
            yield AnswerPiece("text", text=sentence if i == 0 else " " + sentence)
        yield AnswerPiece("done", answer=answer)
        return
    yield AnswerPiece(
        "sources",
        sources=[AnswerCitation.of(x.n, x.hit) for x in sources],
    )
    notice = None
    kept: list[str] = []
    dropped = 0
    try:
        pieces = llm.stream(_prompt(question, sources, False), max_tokens=ANSWER_TOKENS)
        traced = telemetry.llm_stream("answer", "ask.stream", pieces)
        for sentence in sentences_as_they_come(traced):
            if grounded(sentence, sources):
                kept.append(sentence)
                yield AnswerPiece("text", text=sentence if len(kept) == 1 else " " + sentence)
            else:
                dropped += 1
    except Unavailable as exc:
        if kept:
            notice = f"The LLM stopped mid-answer ({exc.message}); the answer may be incomplete"
        else:
            notice = f"The LLM failed ({exc.message}); this answer is extractive"
    if kept:
        text = " ".join(kept)
        if dropped and notice is None:
            notice = f"{dropped} sentence(s) their sources do not support were left out"
        yield AnswerPiece(
            "done", answer=Answer(question, text, "llm", _citations(text, sources), notice)
        )
        return
    notice = notice or "The LLM's answer could not be grounded; this answer is extractive"
    # Sources already named by a ``sources`` event keep their numbers.
    found, answer = _extractive(
        retriever, question, sources, notice, False, user_id=user_id, filters=filters
    )
    said = [] if answer.answered else [NOT_ANSWERED]
    for i, sentence in enumerate([*said, *found.sentences]):
        yield AnswerPiece("text", text=sentence if i == 0 else " " + sentence)
    yield AnswerPiece("done", answer=answer)
