"""Long-document evaluation: does search find the right *section* of a long file?

A BEIR corpus is turned into multi-section Markdown files: passages are put in
a fixed pseudo-random order (by a hash of their id) and grouped, 8 to 12 per
file, each passage one ``## title`` section under the file's ``# Notes NNNN``.
The qrels map to (file, heading). A hit is right when its citation names the
right file AND its heading path holds the passage's heading — so chunking,
heading paths and citations are measured, not just passage ranking.

Metrics per query, over the hits' distinct (file, heading) pairs in rank order:
hit@1, hit@5, hit@k (any right section in the top n), MRR@k and nDCG@k (graded).

The index can be built without the structural header (``header=False``: the
chunker's header budget is 0), to measure what the contextual retrieval header
is worth. Production chunking is unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docshelf.chunk import ChunkSettings
from docshelf.config import Settings
from docshelf.embed import make_embedder
from docshelf.evaluate.beir import (
    INDEX_VERSION,
    Dataset,
    EvalResult,
    _percentile,
    build_index,
    compare,
    eval_home,
    eval_settings,
    evaluate,
    load_beir,
    mrr_at_k,
    ndcg_at_k,
    parse_config,
    recall_at_k,
    run_queries,
)
from docshelf.model import document_id, fingerprint
from docshelf.shelf import Progress, Shelf

MIN_PER_FILE = 8
MAX_PER_FILE = 12
Section = tuple[str, str]  # (file name, heading)


@dataclass(frozen=True)
class LongFile:
    name: str
    text: str
    headings: tuple[str, ...]


@dataclass(frozen=True)
class LongCorpus:
    files: tuple[LongFile, ...]
    section_of: dict[str, Section]  # corpus id -> (file, heading)

    def qrels(self, ds: Dataset) -> dict[str, dict[Section, int]]:
        """The dataset's judgments on (file, heading); the best grade wins on a clash."""
        out: dict[str, dict[Section, int]] = {}
        for qid, grades in ds.qrels.items():
            mapped: dict[Section, int] = {}
            for cid, grade in grades.items():
                section = self.section_of.get(cid)
                if section is not None:
                    mapped[section] = max(grade, mapped.get(section, 0))
            out[qid] = mapped
        return out


def without_header(settings: ChunkSettings) -> ChunkSettings:
    """The same chunking with no room for the structural header: chunks are embedded and
    indexed as bare text (snippet sizes unchanged, so only the header differs)."""
    return dataclasses.replace(settings, header_max_tokens=0)


def heading_for(corpus_id: str, title: str) -> str:
    """A passage's section heading: its title on one line, or a name from its id."""
    one_line = " ".join(title.split())
    return one_line or f"Passage {hashlib.sha256(corpus_id.encode()).hexdigest()[:8]}"


def long_corpus(ds: Dataset, seed: int = 0) -> LongCorpus:
    """Deterministic multi-section files from the dataset's passages (same input, same
    files): order by a hash of the id, then groups of 8-12 drawn from a seeded RNG."""
    order = sorted(ds.corpus, key=lambda p: hashlib.sha256(p[0].encode()).hexdigest())
    rng = random.Random(seed)
    files: list[LongFile] = []
    section_of: dict[str, Section] = {}
    start = 0
    while start < len(order):
        size = rng.randint(MIN_PER_FILE, MAX_PER_FILE)
        group = order[start : start + size]
        start += size
        number = len(files) + 1
        name = f"notes-{number:04d}.md"
        parts = [f"# Notes {number:04d}\n"]
        headings = []
        for cid, title, text in group:
            heading = heading_for(cid, title)
            headings.append(heading)
            section_of[cid] = (name, heading)
            parts.append(f"## {heading}\n\n{' '.join(text.split())}\n")
        files.append(LongFile(name, "\n".join(parts), tuple(headings)))
    return LongCorpus(tuple(files), section_of)


def build_long_index(
    shelf: Shelf, corpus: LongCorpus, *, header: bool = True, progress: Progress | None = None
) -> dict[str, str]:
    """Index the files into ``shelf`` (once) and make its query model ready, as
    ``build_index``; returns document id -> file name. Without ``header`` the chunker gets
    no room for the structural header (eval only)."""
    if not header:
        shelf.chunk_settings = without_header(shelf.chunk_settings)
    items = [(f.name, f.text.encode("utf-8"), None) for f in corpus.files]
    marker = f"long:{INDEX_VERSION}"
    if shelf.store.get_meta("eval_index") != marker:
        shelf.add_documents(items, progress=progress)
        shelf.store.set_meta("eval_index", marker)
    shelf.prepare_query_model()
    return {document_id(fingerprint(data)): name for name, data, _ in items}


@dataclass(frozen=True)
class LongQueryResult:
    query_id: str
    query: str
    hit1: float
    hit5: float
    hitk: float
    mrr: float
    ndcg: float
    ms: float
    top: tuple[Section, ...]  # the first few sections retrieved

    def as_json(self, k: int) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query": self.query,
            "hit@1": self.hit1,
            "hit@5": self.hit5,
            f"hit@{k}": self.hitk,
            f"mrr@{k}": round(self.mrr, 4),
            f"ndcg@{k}": round(self.ndcg, 4),
            "ms": round(self.ms, 2),
            "top": [f"{name}#{heading}" for name, heading in self.top],
        }


@dataclass(frozen=True)
class LongEvalResult:
    dataset: str
    mode: str
    config: str
    header: bool
    files: int
    queries: int
    k: int
    per_query: tuple[LongQueryResult, ...]

    def metrics(self) -> tuple[tuple[str, str], ...]:
        """(name in the output, attribute of a per-query result)."""
        k = self.k
        return (
            ("hit@1", "hit1"),
            ("hit@5", "hit5"),
            (f"hit@{k}", "hitk"),
            (f"mrr@{k}", "mrr"),
            (f"ndcg@{k}", "ndcg"),
        )

    def as_json(self) -> dict[str, Any]:
        times = [q.ms for q in self.per_query]
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "evaluation": "long-doc",
            "header": self.header,
            "files": self.files,
            "queries": self.queries,
        }
        for name, attr in self.metrics():
            values = [float(getattr(q, attr)) for q in self.per_query]
            out[name] = round(statistics.fmean(values), 4) if values else 0.0
        out.update(
            p50_ms=round(_percentile(times, 50), 2),
            p95_ms=round(_percentile(times, 95), 2),
            mode=self.mode,
            config=self.config,
        )
        return out


def hit_sections(
    hits: list[tuple[str, tuple[str, ...]]], headings: dict[str, tuple[str, ...]]
) -> list[Section]:
    """Each hit's (file, heading) — the deepest heading of its path that is one of the
    file's passage headings — deduplicated in rank order; hits citing no passage
    heading (the file's H1 alone) count as a miss at their rank."""
    out: list[Section] = []
    for name, path in hits:
        known = headings.get(name, ())
        heading = next((h for h in reversed(path) if h in known), "")
        out.append((name, heading))
    return list(dict.fromkeys(out))


def evaluate_long(
    shelf: Shelf,
    ds: Dataset,
    corpus: LongCorpus,
    doc_to_file: dict[str, str],
    *,
    mode: str = "hybrid",
    k: int = 10,
    header: bool = True,
) -> LongEvalResult:
    """Run every query with configuration ``mode``; score the cited (file, heading)."""
    qrels = corpus.qrels(ds)
    headings = {f.name: f.headings for f in corpus.files}
    rows: list[LongQueryResult] = []
    actual_mode = parse_config(mode)[0]
    for qid, text, result, ms in run_queries(shelf, ds, mode, k):
        actual_mode = result.mode
        ranked = hit_sections(
            [(doc_to_file.get(h.document.id, ""), h.citation.heading_path) for h in result.hits],
            headings,
        )
        grades = qrels.get(qid, {})
        rows.append(
            LongQueryResult(
                query_id=qid,
                query=text,
                hit1=float(recall_at_k(ranked, grades, 1) > 0),
                hit5=float(recall_at_k(ranked, grades, 5) > 0),
                hitk=float(recall_at_k(ranked, grades, k) > 0),
                mrr=mrr_at_k(ranked, grades, k),
                ndcg=ndcg_at_k(ranked, grades, k),
                ms=ms,
                top=tuple(ranked[:3]),
            )
        )
    return LongEvalResult(
        dataset=ds.name,
        mode=actual_mode,
        config=mode,
        header=header,
        files=len(corpus.files),
        queries=len(rows),
        k=k,
        per_query=tuple(rows),
    )


Measured = EvalResult | LongEvalResult


def _run_one(
    settings: Settings,
    ds: Dataset,
    config: str,
    k: int,
    *,
    long_doc: bool,
    header: bool,
    against: str | None = None,
    progress: Progress | None = None,
) -> tuple[Measured, Measured | None]:
    """Build (once) the index of one layout and header setting, then run ``config`` (and
    ``against``, on the same index)."""
    embedder = make_embedder(settings.embedder)
    model = embedder.model_id if embedder else "none"
    variant = "-".join(p for p in ("long" if long_doc else "", "" if header else "no-header") if p)
    home = eval_home(settings.home, ds, model, variant)
    with Shelf(settings=eval_settings(home, model, settings), embedder=embedder) as shelf:
        if not header:
            shelf.chunk_settings = without_header(shelf.chunk_settings)
        configs = [config, *([against] if against else [])]
        runs: list[Measured] = []
        if long_doc:
            corpus = long_corpus(ds)
            files = build_long_index(shelf, corpus, header=header, progress=progress)
            for c in configs:
                runs.append(evaluate_long(shelf, ds, corpus, files, mode=c, k=k, header=header))
        else:
            mapping = build_index(shelf, ds, progress)
            for c in configs:
                runs.append(evaluate(shelf, ds, mapping, mode=c, k=k))
    return runs[0], (runs[1] if len(runs) > 1 else None)


def run_variants(
    settings: Settings,
    dataset: str | Path,
    *,
    mode: str = "hybrid",
    against: str | None = None,
    k: int = 10,
    long_doc: bool = False,
    header: str = "on",
    progress: Progress | None = None,
) -> tuple[Measured, Measured | None, dict[str, Any]]:
    """``docshelf eval`` over a layout (passages or long files) and a header setting
    (``on``, ``off`` or ``compare``: the same configuration with the header, then
    without, compared query by query). Returns both runs and the JSON result."""
    for config in (mode, against):
        if config is not None:
            parse_config(config)
    ds = load_beir(dataset)
    if header == "compare":
        first, _ = _run_one(
            settings, ds, mode, k, long_doc=long_doc, header=True, progress=progress
        )
        plain, _ = _run_one(
            settings, ds, mode, k, long_doc=long_doc, header=False, progress=progress
        )
        result = compare(first, plain)
        for side, label in (("a", "on"), ("b", "off")):
            result[side]["header"] = label == "on"
            result[side]["config"] = f"{mode}, header {label}"
        return first, plain, result
    first, second = _run_one(
        settings,
        ds,
        mode,
        k,
        long_doc=long_doc,
        header=header == "on",
        against=against,
        progress=progress,
    )
    result = compare(first, second) if second is not None else first.as_json()
    return first, second, result
