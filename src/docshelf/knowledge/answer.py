"""Grounded answers: retrieve, answer with inline ``[n]`` citations, verify.

With an LLM, the model answers from numbered sources (hits expanded to their
parent sections within a token budget). Every ``[n]`` is then checked against
the sources actually given: an answer citing something that was not retrieved
is regenerated once, and if it still cites outside the sources, the sentences
carrying the broken citations are removed — a broken citation never reaches
the user. Without an LLM (or when it fails), the answer is extractive: the
sentences of the hits that best match the question, each with its citation.
The result always names its mode.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docshelf import telemetry
from docshelf.errors import InvalidInput, Unavailable
from docshelf.llm import LLM, Message
from docshelf.model import Hit
from docshelf.search.query import lexical_terms

if TYPE_CHECKING:
    from docshelf.search.retriever import Retriever

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# Where one sentence ends and the next begins (shared with enrich.py).
SENTENCE_BOUNDARY = _SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")

SYSTEM = (
    "You answer questions using only the numbered sources you are given. "
    "Cite every claim with the number of its source in square brackets, like [1] or [2][3]. "
    "Cite only numbers that appear in the sources. If the sources do not answer the "
    "question, say so briefly. Answer concisely."
)


@dataclass(frozen=True)
class AnswerCitation:
    n: int
    chunk_id: str
    label: str


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    mode: str  # "llm" | "extractive"
    citations: list[AnswerCitation]
    notice: str | None = None


@dataclass(frozen=True)
class Source:
    n: int
    hit: Hit
    text: str


def cited_numbers(text: str) -> list[int]:
    """Every number cited in ``text`` (``[2]``, ``[1, 3]``), in order of appearance."""
    return [int(n) for group in _CITE.findall(text) for n in group.split(",")]


def strip_broken(text: str, valid: set[int]) -> str:
    """Drop the sentences that cite any number outside ``valid``."""
    sentences = _SENTENCE.split(text.strip())
    kept = [s for s in sentences if set(cited_numbers(s)) <= valid]
    return " ".join(kept).strip()


def gather_sources(
    retriever: Retriever, hits: Sequence[Hit], user_id: str | None, budget_tokens: int
) -> list[Source]:
    """One source per hit (hits sharing a section share one), expanded to the parent
    section while the token budget lasts, else the snippet itself."""
    sources: list[Source] = []
    seen_sections: set[str] = set()
    used = 0
    for hit in hits:
        section_id = hit.chunk.parent_id or hit.chunk.id
        if section_id in seen_sections:
            continue
        seen_sections.add(section_id)
        text = hit.chunk.text
        cost = hit.chunk.token_count
        if hit.chunk.parent_id:
            section = retriever.context(hit.chunk.id, "parent-section", user_id=user_id).chunks[0]
            if used + section.token_count <= budget_tokens:
                text, cost = section.text, section.token_count
        if used + cost > budget_tokens and sources:
            break
        used += cost
        sources.append(Source(len(sources) + 1, hit, text))
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
    return [
        AnswerCitation(n, by_n[n].hit.chunk.id, by_n[n].hit.citation.label) for n in sorted(cited)
    ]


def llm_answer(llm: LLM, question: str, sources: Sequence[Source]) -> str | None:
    """The model's answer with every citation valid, or None if it cannot be had."""
    valid = {s.n for s in sources}
    text = ""
    with telemetry.llm_call("answer", "ask"):
        for strict in (False, True):
            text = llm.complete(_prompt(question, sources, strict)).text.strip()
            if set(cited_numbers(text)) <= valid:
                return text
    repaired = strip_broken(text, valid)
    return repaired if repaired and cited_numbers(repaired) else None


def extractive_answer(
    retriever: Retriever, question: str, sources: Sequence[Source], sentences: int = 3
) -> str:
    """The best sentences of the hits for the question, each with its citation.

    Sentences are scored by the question's terms they contain (stemmed by
    prefix) and, when an embedder is available, by cosine similarity to the
    question; ties keep retrieval order. Deterministic."""
    terms = lexical_terms(question)
    candidates: list[tuple[int, str]] = []
    for s in sources:
        for sentence in _SENTENCE.split(" ".join(s.hit.chunk.text.split())):
            if len(sentence) > 20:
                candidates.append((s.n, sentence))
    if not candidates:
        return ""
    scores = [_term_score(sentence, terms) for _, sentence in candidates]
    embedder = retriever.embedder
    if embedder is not None:
        vectors = embedder.embed([question] + [c[1] for c in candidates])
        sims = vectors[1:] @ vectors[0]
        scores = [t + float(v) for t, v in zip(scores, sims, strict=True)]
    ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    per_source: dict[int, int] = {}
    for i in ranked:
        n = candidates[i][0]
        if per_source.get(n, 0) >= 2:
            continue
        per_source[n] = per_source.get(n, 0) + 1
        chosen.append(i)
        if len(chosen) == sentences:
            break
    return " ".join(f"{candidates[i][1]} [{candidates[i][0]}]" for i in chosen)


def _term_score(sentence: str, terms: Sequence[str]) -> float:
    words = [w.lower() for w in re.findall(r"\w+", sentence)]
    if not terms or not words:
        return 0.0
    hits = sum(any(w.startswith(t[:5]) for w in words) for t in terms)
    return hits / len(terms)


def ask(
    retriever: Retriever,
    question: str,
    *,
    limit: int = 5,
    user_id: str | None = None,
    llm: LLM | None = None,
    budget_tokens: int = 3000,
) -> Answer:
    result = retriever.search(question, limit=limit, user_id=user_id)
    if not result.hits:
        return Answer(question, "No document matched the question.", "extractive", [])
    sources = gather_sources(retriever, result.hits, user_id, budget_tokens)
    notice = None
    if llm is not None:
        try:
            text = llm_answer(llm, question, sources)
        except Unavailable as exc:
            text, notice = None, f"The LLM failed ({exc.message}); this answer is extractive"
        if text:
            return Answer(question, text, "llm", _citations(text, sources))
        notice = notice or "The LLM's answer could not be grounded; this answer is extractive"
    text = extractive_answer(retriever, question, sources)
    return Answer(question, text, "extractive", _citations(text, sources), notice)


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
        parts = _SENTENCE.split(buffer)
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
) -> Iterator[AnswerPiece]:
    """``ask``, delivered as it is written. Each sentence is checked before it is sent:
    one citing a source that was not retrieved is left out (it cannot be regenerated
    once the sentences around it are out), so a broken citation never reaches the user.
    An empty question is refused here, before the first piece is asked for."""
    if not question or not question.strip():
        raise InvalidInput("The question is empty")
    return _stream(retriever, question, limit, user_id, llm, budget_tokens)


def _stream(
    retriever: Retriever,
    question: str,
    limit: int,
    user_id: str | None,
    llm: LLM | None,
    budget_tokens: int,
) -> Iterator[AnswerPiece]:
    result = retriever.search(question, limit=limit, user_id=user_id)
    if not result.hits:
        yield AnswerPiece(
            "done", answer=Answer(question, "No document matched the question.", "extractive", [])
        )
        return
    sources = gather_sources(retriever, result.hits, user_id, budget_tokens)
    yield AnswerPiece(
        "sources",
        sources=[AnswerCitation(x.n, x.hit.chunk.id, x.hit.citation.label) for x in sources],
    )
    notice = None
    if llm is not None:
        valid = {x.n for x in sources}
        kept: list[str] = []
        dropped = 0
        try:
            pieces = llm.stream(_prompt(question, sources, False))
            traced = telemetry.llm_stream("answer", "ask.stream", pieces)
            for sentence in sentences_as_they_come(traced):
                if set(cited_numbers(sentence)) <= valid:
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
                notice = (
                    f"{dropped} sentence(s) citing sources that were not retrieved were left out"
                )
            yield AnswerPiece(
                "done", answer=Answer(question, text, "llm", _citations(text, sources), notice)
            )
            return
        notice = notice or "The LLM's answer could not be grounded; this answer is extractive"
    text = extractive_answer(retriever, question, sources)
    yield AnswerPiece("text", text=text)
    yield AnswerPiece(
        "done", answer=Answer(question, text, "extractive", _citations(text, sources), notice)
    )
