"""Enrichment: what a document is about — summary, document type, concepts and
distillates (key claims citing their chunks).

Two producers, one result shape (``Enrichment``, whose ``mode`` says which made it):

- **offline** (deterministic, no server): sentence centrality over the
  embeddings — the snippets nearest the document's centroid give candidate
  sentences, which are embedded and ranked by their similarity to that centroid
  (term-frequency cosine when there is no embedder); the document type from
  structural cues; concepts by embedding similarity between the snippets and
  the taxonomy's labels, above a threshold.
- **llm**: one prompt per document that must return a JSON object, validated
  (types, known concept ids, citations that exist); invalid output is retried
  once with the error, then the offline form stands.

Concepts a document's own tags map to (``frontmatter``), and those a manifest
wrote (``manifest``: decided elsewhere, knowledge/manifest.py), always win over
derived ones: the author said so.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from docshelf import plaintext, telemetry
from docshelf.accounts.access import described
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.llm import LLM, Message
from docshelf.model import DOCUMENT_TYPES, Chunk, Document, Enrichment
from docshelf.plaintext import SENTENCE_BOUNDARY, Markup
from docshelf.search.query import lexical_terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

Embed = Callable[[list[str]], "Vectors"]

GENERAL = "general"  # the category of a document with no concept
# Concept sources a producer keeps rather than replaces with its own guesses.
DECIDED = ("frontmatter", "manual", "manifest")

_TIMESTAMP_LINE = re.compile(r"^\s*\[?\(?\d{1,2}:\d{2}(:\d{2})?\]?\)?\s")
_SPEAKER_LINE = re.compile(r"^\s*[A-Z][\w .'-]{0,30}:\s+\S")


@dataclass(frozen=True)
class EnrichSettings:
    locale: str = "en"
    summary_sentences: int = 3
    claims: int = 5
    central_snippets: int = 4  # snippets whose sentences are candidates
    max_candidates: int = 40  # sentences embedded per document, at most
    # snippets a document's centre is found among, at most (spread evenly over a longer
    # one): the step's time and memory stay bounded whatever the document's size
    max_snippets: int = 1000
    concept_threshold: float = 0.30  # cosine, mean of a concept's 3 best snippets
    max_concepts: int = 3
    llm_excerpt_tokens: int = 2500


def split_sentences(text: str, markup: Markup = "markdown") -> list[str]:
    """Prose sentences of ``text`` as a person reads them (``plaintext.plain_units``):
    headings, tables and code left out, comments too (an Obsidian ``%% … %%`` note to
    the author is no summary), links, code spans and emphasis read as their text."""
    out: list[str] = []
    for unit in plaintext.plain_units(text, markup):
        out.extend(s.strip() for s in SENTENCE_BOUNDARY.split(unit) if s.strip())
    return out


def _is_claim_like(sentence: str) -> bool:
    words = sentence.split()
    if not 6 <= len(words) <= 80 or len(sentence) > 500:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence) and sentence[-1] in ".!?\"')"


# -- document type ----------------------------------------------------------------------------
_PAPER = {"abstract", "references", "bibliography", "related work", "conclusion", "conclusions"}
_MANUAL = {
    "installation",
    "install",
    "usage",
    "configuration",
    "getting started",
    "quickstart",
    "quick start",
    "troubleshooting",
    "setup",
    "api reference",
    "reference",
    "requirements",
}
_REPORT = {
    "executive summary",
    "findings",
    "recommendations",
    "methodology",
    "key findings",
    "appendix",
    "scope",
    "background",
}


def guess_document_type(doc: Document, chunks: Iterable[Chunk]) -> str:
    """A deterministic guess from structure: headings, pages, length and line shapes.
    Read chunk by chunk, never as one string: a 25 MB document costs no copy of itself.
    ``chunks`` is gone through more than once (a list, or the enricher's pages of the
    store, read again each time)."""
    headings = {
        re.sub(r"^[\d.\s]+", "", h).strip().casefold() for c in chunks for h in c.heading_path
    }
    if len(headings & _PAPER) >= 2 or (
        "abstract" in _head(chunks, 3000).casefold()
        and any("doi" in c.text.casefold() for c in chunks)
    ):
        return "paper"
    chapters = sum(1 for h in headings if re.match(r"(chapter|part)\s+\w+", h))
    if (doc.page_count or 0) >= 100 or chapters >= 5:
        return "book"
    lines = list(
        itertools.islice((ln for c in chunks for ln in c.text.splitlines() if ln.strip()), 300)
    )
    if lines:
        spoken = sum(bool(_TIMESTAMP_LINE.match(ln) or _SPEAKER_LINE.match(ln)) for ln in lines)
        if len(lines) >= 10 and spoken >= 0.4 * len(lines):
            return "transcript"
    if len(headings & _MANUAL) >= 2:
        return "manual"
    if len(headings & _REPORT) >= 2:
        return "report"
    if doc.file_type in ("markdown", "text") and _fewer_words(chunks, 1500):
        return "note"
    return "article"


def _head(chunks: Iterable[Chunk], n: int) -> str:
    """The first ``n`` characters of the chunks' texts joined by line breaks."""
    parts: list[str] = []
    size = 0
    for c in chunks:
        if size >= n:
            break
        parts.append(c.text)
        size += len(c.text) + 1
    return "\n".join(parts)[:n]


def _fewer_words(chunks: Iterable[Chunk], n: int) -> bool:
    words = 0
    for c in chunks:
        words += len(c.text.split())
        if words >= n:
            return False
    return True


# -- offline ----------------------------------------------------------------------------------
def _unit(v: Vectors) -> Vectors:
    import numpy as np

    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


@dataclass(frozen=True)
class _Candidate:
    text: str
    chunk_id: str
    order: tuple[int, int]  # (snippet index, sentence index): document order


def _candidates(
    snippets: Sequence[Chunk], ranked: Sequence[int], limit: int, markup: Markup
) -> list[_Candidate]:
    out: list[_Candidate] = []
    for i in ranked:
        c = snippets[i]
        for j, sentence in enumerate(split_sentences(c.text, markup)):
            if _is_claim_like(sentence):
                out.append(_Candidate(sentence, c.id, (c.index, j)))
                if len(out) == limit:
                    return out
    return out


def _pick(cands: Sequence[_Candidate], scores: Sequence[float], n: int) -> list[_Candidate]:
    """The best ``n`` by score, skipping near-repeats of a sentence already chosen."""
    chosen: list[_Candidate] = []
    seen: list[set[str]] = []
    for i in sorted(range(len(cands)), key=lambda i: (-scores[i], cands[i].order)):
        words = set(lexical_terms(cands[i].text))
        if any(len(words & s) >= 0.8 * max(1, min(len(words), len(s))) for s in seen):
            continue
        chosen.append(cands[i])
        seen.append(words)
        if len(chosen) == n:
            break
    return chosen


class _Centrality:
    """Term-frequency cosine to a document's own terms: the document's vector and its
    norm computed once, each text scored over its own terms only (linear in the text,
    not in the document's vocabulary: per snippet that made 3.5 MB take 431 s)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.doc = Counter(t for text in texts for t in lexical_terms(text))
        self.norm = math.sqrt(sum(v * v for v in self.doc.values()))

    def __call__(self, text: str) -> float:
        terms = Counter(lexical_terms(text))
        dot = sum(v * self.doc.get(k, 0) for k, v in terms.items())
        norm = math.sqrt(sum(v * v for v in terms.values()))
        return dot / (norm * self.norm) if norm and self.norm else 0.0


def considered(snippets: Sequence[Chunk], limit: int) -> list[Chunk]:
    """The snippets enrichment looks at: all of them up to ``limit``, else ``limit``
    spread evenly from the first to the last (in document order)."""
    return considered_of(snippets, len(snippets), limit)


def considered_of(snippets: Iterable[Chunk], count: int, limit: int) -> list[Chunk]:
    """``considered`` of ``count`` snippets that come one at a time (a document's, read
    from the store a page at a time): only the chosen ones are kept."""
    if count <= limit:
        return list(itertools.islice(snippets, count))
    step = count / limit
    wanted = {int(i * step) for i in range(limit)}
    return [c for n, c in enumerate(itertools.islice(snippets, count)) if n in wanted]


def offline_enrichment(
    doc: Document,
    chunks: Iterable[Chunk],
    *,
    snippets: Sequence[Chunk] | None = None,
    snippet_vectors: Vectors | None,
    embed: Embed | None,
    taxonomy: Taxonomy,
    concept_vectors: Vectors | None,
    settings: EnrichSettings = EnrichSettings(),
) -> Enrichment:
    """The deterministic enrichment of one document (see the module's docstring). At
    most ``settings.max_snippets`` snippets are considered (``considered``): ``snippets``
    when the caller has taken them, else taken from ``chunks``; when ``snippet_vectors``
    are given they are those snippets' vectors, in that order. ``chunks`` (all of the
    document's, sections first) is gone through chunk by chunk for its type."""
    import numpy as np

    if snippets is None:
        snippets = considered(
            [c for c in chunks if c.tier.value == "snippet"], settings.max_snippets
        )
    markup = plaintext.markup_of(doc.file_type, any(c.heading_path for c in snippets))
    n_claims = max(settings.claims, settings.summary_sentences)
    if snippet_vectors is not None and embed is not None and len(snippets):
        centroid = _unit(snippet_vectors.mean(axis=0))
        central = np.argsort(-(snippet_vectors @ centroid), kind="stable")
        cands = _candidates(
            snippets,
            [int(i) for i in central[: settings.central_snippets]],
            settings.max_candidates,
            markup,
        )
        if cands:
            sims = embed([c.text for c in cands]) @ centroid
            picked = _pick(cands, [float(s) for s in sims], n_claims)
        else:
            picked = []
    else:
        centrality = _Centrality([c.text for c in snippets])
        snippet_scores = [centrality(c.text) for c in snippets]
        central_idx = sorted(range(len(snippets)), key=lambda i: (-snippet_scores[i], i))
        cands = _candidates(
            snippets, central_idx[: settings.central_snippets], settings.max_candidates, markup
        )
        scores = [centrality(c.text) for c in cands]
        picked = _pick(cands, scores, n_claims)

    summary_part = sorted(picked[: settings.summary_sentences], key=lambda c: c.order)
    summary = " ".join(c.text for c in summary_part)
    claims = tuple((c.text, (c.chunk_id,)) for c in picked[: settings.claims])

    concept_ids, source = _offline_concepts(
        doc, snippet_vectors, taxonomy, concept_vectors, settings
    )
    return Enrichment(
        summary=summary,
        document_type=guess_document_type(doc, chunks),
        category=concept_ids[0] if concept_ids else GENERAL,
        concept_ids=concept_ids,
        concept_source=source,
        taxonomy_version=taxonomy.version,
        claims=claims,
        mode="offline",
    )


def concept_texts(taxonomy: Taxonomy) -> tuple[list[str], list[str]]:
    """(concept ids, the text embedded for each: its labels in one line)."""
    ids = list(taxonomy.concepts)
    texts = []
    for cid in ids:
        c = taxonomy.concepts[cid]
        alts = ", ".join(c.alt_labels)
        texts.append(f"{c.label}: {alts}" if alts else c.label)
    return ids, texts


def _offline_concepts(
    doc: Document,
    snippet_vectors: Vectors | None,
    taxonomy: Taxonomy,
    concept_vectors: Vectors | None,
    settings: EnrichSettings,
) -> tuple[tuple[str, ...], str | None]:
    if doc.concept_source in DECIDED and doc.concept_ids:
        return doc.concept_ids, doc.concept_source
    if snippet_vectors is None or concept_vectors is None or not len(snippet_vectors):
        return (), None
    import numpy as np

    ids = list(taxonomy.concepts)
    sims = snippet_vectors @ concept_vectors.T  # snippets x concepts
    top = min(3, sims.shape[0])
    score = np.sort(sims, axis=0)[-top:].mean(axis=0)
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    chosen = tuple(
        ids[i] for i in order[: settings.max_concepts] if score[i] >= settings.concept_threshold
    )
    return chosen, ("embedding" if chosen else None)


# -- with an LLM ------------------------------------------------------------------------------
class _Claim(BaseModel):
    text: str = Field(min_length=1, max_length=600)
    sources: list[int] = Field(min_length=1, max_length=5)


class _Reply(BaseModel):
    summary: str = Field(min_length=1, max_length=2000)
    document_type: str
    concepts: list[str] = Field(default_factory=list, max_length=5)
    claims: list[_Claim] = Field(default_factory=list, max_length=8)


SYSTEM = (
    "You describe documents for a search library. Reply with exactly one JSON object "
    "and nothing else."
)


@dataclass(frozen=True)
class LLMOutcome:
    enrichment: Enrichment | None  # None: no valid answer could be had
    prompt_tokens: int
    completion_tokens: int
    calls: int
    error: str | None = None


def _prompt(
    doc: Document,
    excerpts: Sequence[Chunk],
    taxonomy: Taxonomy,
    settings: EnrichSettings,
    problem: str | None,
) -> list[Message]:
    outline = sorted({" > ".join(c.heading_path) for c in excerpts if c.heading_path})
    concepts = "\n".join(
        f"- {c.id}: {c.label}" + (f" ({', '.join(c.alt_labels)})" if c.alt_labels else "")
        for c in list(taxonomy.concepts.values())[:300]
    )
    blocks = "\n\n".join(f"[{n}] {c.text}" for n, c in enumerate(excerpts, 1))
    ask = (
        f"Document: {described(doc)}\n"
        f"Outline:\n{chr(10).join(outline) or '(none)'}\n\n"
        f"Numbered excerpts:\n\n{blocks}\n\n"
        f"Concepts you may use (ids):\n{concepts}\n\n"
        "Return a JSON object with these keys:\n"
        f'- "summary": 2-3 sentences on what the document is about, in the language of locale '
        f'"{settings.locale}";\n'
        f'- "document_type": one of {", ".join(DOCUMENT_TYPES)};\n'
        f'- "concepts": up to {settings.max_concepts} concept ids from the list, the most '
        "central first (an empty list when none fits);\n"
        f'- "claims": up to {settings.claims} key claims or facts, each '
        '{"text": "...", "sources": [excerpt numbers it comes from]}.'
    )
    if problem:
        ask += f"\n\nYour previous reply was not valid: {problem}. Reply again, valid."
    return [Message("system", SYSTEM), Message("user", ask)]


def _json_object(text: str) -> Any:
    """The JSON object in a reply, tolerating a code fence or prose around it."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    return json.loads(text[start : end + 1])


def _validated(
    text: str, excerpts: Sequence[Chunk], taxonomy: Taxonomy, settings: EnrichSettings
) -> _Reply:
    """The reply as a checked object; ``ValueError`` says what is wrong with it."""
    try:
        reply = _Reply.model_validate(_json_object(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None
    if reply.document_type not in DOCUMENT_TYPES:
        raise ValueError(f"document_type {reply.document_type!r} is not one of the list")
    unknown = [c for c in reply.concepts if c not in taxonomy.concepts]
    if unknown:
        raise ValueError(f"unknown concept ids: {', '.join(unknown)}")
    bad = sorted({n for c in reply.claims for n in c.sources if not 1 <= n <= len(excerpts)})
    if bad:
        raise ValueError(f"claims cite excerpts that do not exist: {bad}")
    return reply


def llm_excerpts(snippets: Sequence[Chunk], ranked: Sequence[int], budget: int) -> list[Chunk]:
    """Snippets in ``ranked`` order while the token budget lasts, then in document order."""
    chosen: list[Chunk] = []
    used = 0
    for i in ranked:
        c = snippets[i]
        if chosen and used + c.token_count > budget:
            break
        chosen.append(c)
        used += c.token_count
    return sorted(chosen, key=lambda c: c.index)


def llm_enrichment(
    llm: LLM,
    doc: Document,
    excerpts: Sequence[Chunk],
    taxonomy: Taxonomy,
    settings: EnrichSettings = EnrichSettings(),
) -> LLMOutcome:
    """Ask the model; validate; retry once with the problem named. Raises ``Unavailable``
    when the server cannot answer (the caller falls back to the offline form)."""
    problem: str | None = None
    prompt_tokens = completion_tokens = calls = 0
    run_id = telemetry.new_run_id()  # the retry is part of the same enrichment
    for _ in range(2):
        with telemetry.llm_call("enrich", "enrich", run_id=run_id, document_id=doc.id):
            completion = llm.complete(
                _prompt(doc, excerpts, taxonomy, settings, problem), max_tokens=900
            )
        calls += 1
        prompt_tokens += completion.prompt_tokens
        completion_tokens += completion.completion_tokens
        try:
            reply = _validated(completion.text, excerpts, taxonomy, settings)
        except ValueError as exc:
            problem = str(exc)
            continue
        frontmatter = doc.concept_source in DECIDED and doc.concept_ids
        concept_ids = doc.concept_ids if frontmatter else tuple(dict.fromkeys(reply.concepts))
        enrichment = Enrichment(
            summary=" ".join(reply.summary.split()),
            document_type=reply.document_type,
            category=concept_ids[0] if concept_ids else GENERAL,
            concept_ids=concept_ids[: settings.max_concepts] if not frontmatter else concept_ids,
            concept_source=(doc.concept_source if frontmatter else "llm") if concept_ids else None,
            taxonomy_version=taxonomy.version,
            claims=tuple(
                (
                    " ".join(c.text.split()),
                    tuple(dict.fromkeys(excerpts[n - 1].id for n in c.sources)),
                )
                for c in reply.claims[: settings.claims]
            ),
            mode="llm",
            model=completion.model or llm.model,
        )
        return LLMOutcome(enrichment, prompt_tokens, completion_tokens, calls)
    return LLMOutcome(None, prompt_tokens, completion_tokens, calls, problem)


# -- the cache's serial form ------------------------------------------------------------------
def to_json(e: Enrichment) -> str:
    return json.dumps(
        {
            "summary": e.summary,
            "document_type": e.document_type,
            "category": e.category,
            "concept_ids": list(e.concept_ids),
            "concept_source": e.concept_source,
            "taxonomy_version": e.taxonomy_version,
            "claims": [[t, list(ids)] for t, ids in e.claims or ()],
            "mode": e.mode,
            "model": e.model,
        }
    )


def from_json(raw: str) -> Enrichment | None:
    """A cached enrichment, or None when the entry cannot be read (it is then redone)."""
    try:
        d = json.loads(raw)
        return Enrichment(
            summary=str(d["summary"]),
            document_type=str(d["document_type"]),
            category=str(d["category"]),
            concept_ids=tuple(str(c) for c in d["concept_ids"]),
            concept_source=d["concept_source"],
            taxonomy_version=d["taxonomy_version"],
            claims=tuple((str(t), tuple(str(i) for i in ids)) for t, ids in d["claims"]),
            mode=str(d["mode"]),
            model=d.get("model"),
        )
    except (ValueError, KeyError, TypeError):
        return None
