"""Retrieval evaluation on BEIR-format data (``corpus.jsonl``, ``queries.jsonl``,
``qrels/test.tsv``): nDCG@k, recall@k and MRR@k at the document level.

Each passage becomes one Markdown document (``# title`` then the text) indexed
through the ordinary pipeline. The index is built once per (dataset, model,
chunker) and kept under ``$DOCSHELF_HOME/eval/`` so the modes can be compared
on the same index without re-embedding.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import statistics
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from docshelf.config import Settings, one_process_engine
from docshelf.errors import InvalidInput
from docshelf.evaluate.study import Study, study_ranking
from docshelf.search.filters import SEARCH_MODES
from docshelf.search.order import FusionSettings, Ranking, product
from docshelf.search.results import SearchResult
from docshelf.shelf import Progress, Shelf

# Bump when chunking or indexing changes in a way that invalidates cached eval indexes.
INDEX_VERSION = "3"

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path
    corpus: list[tuple[str, str, str]]  # (id, title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> grade (> 0 only)

    def key(self) -> str:
        h = hashlib.sha256()
        for f in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            st = (self.path / f).stat()
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class QueryResult:
    query_id: str
    query: str
    ndcg: float
    recall: float
    mrr: float
    ms: float
    candidate_recall: dict[int, float]  # recall of the fused candidate list at 50 and 100
    stages_ms: dict[str, float]

    def as_json(self, k: int) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query": self.query,
            f"ndcg@{k}": round(self.ndcg, 4),
            f"recall@{k}": round(self.recall, 4),
            f"mrr@{k}": round(self.mrr, 4),
            **{f"candidate_recall@{n}": round(v, 4) for n, v in self.candidate_recall.items()},
            "ms": round(self.ms, 2),
            "stages_ms": {k2: round(v, 2) for k2, v in self.stages_ms.items()},
        }


@dataclass(frozen=True)
class EvalResult:
    dataset: str
    mode: str
    queries: int
    k: int
    ndcg: float
    recall: float
    mrr: float
    p50_ms: float
    p95_ms: float
    config: str = ""
    per_query: tuple[QueryResult, ...] = ()

    def metrics(self) -> tuple[tuple[str, str], ...]:
        """(name in the output, attribute of a per-query result)."""
        k = self.k
        return ((f"ndcg@{k}", "ndcg"), (f"recall@{k}", "recall"), (f"mrr@{k}", "mrr"))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "queries": self.queries,
            f"ndcg@{self.k}": round(self.ndcg, 4),
            f"recall@{self.k}": round(self.recall, 4),
            f"mrr@{self.k}": round(self.mrr, 4),
            "p50_ms": round(self.p50_ms, 2),
            "p95_ms": round(self.p95_ms, 2),
            "mode": self.mode,
        }
        if self.per_query:
            out["config"] = self.config
            for n in (50, 100):
                values = [q.candidate_recall[n] for q in self.per_query]
                out[f"candidate_recall@{n}"] = round(statistics.fmean(values), 4)
            stages = sorted({s for q in self.per_query for s in q.stages_ms})
            out["stages_ms"] = {
                stage: {
                    "p50": round(
                        _percentile([q.stages_ms.get(stage, 0.0) for q in self.per_query], 50), 2
                    ),
                    "p95": round(
                        _percentile([q.stages_ms.get(stage, 0.0) for q in self.per_query], 95), 2
                    ),
                }
                for stage in stages
            }
        return out


# the product's options (FusionSettings) and the study's (evaluate/study.py)
OPTIONS = {
    "strong": "strong_lead",
    "exact": "exact_first",
    "few": "few_lexical",
    "perdoc": "per_document",
    "repeats": "repeated_in",
}
STUDY_OPTIONS = {
    "adapt": "adaptive_lead",
    "heading": "heading_boost",
    "section": "section_evidence",
    "sibling": "sibling_heading",
    "top": "first_top",
    "toplead": "first_lead",
    "agree": "agree_first",
    "fbmix": "feedback_mix",
}
# options of every mode (the rest are fusion's)
ANY_MODE = ("heading", "section", "exact", "sibling")


def parse_config(config: str) -> tuple[str, Ranking | None]:
    """``hybrid``, ``lexical``, ``vector``, ``hybrid:rrf`` or ``hybrid:convex:0.7`` (the
    number is the vector weight), optionally followed by ``:M`` or ``:M:B`` — feedback
    from the top M snippets with weight B (``:0`` turns feedback off) — and by options:
    the product's ``+strong:T`` (a list's first leading by T of its range goes first;
    ``+strong:0`` turns it off), ``+few:N``, ``+exact:0|1``, ``+perdoc:N`` (at most N
    hits of one document before the others') and ``+repeats:N`` (a block N documents
    hold is never cited; ``+repeats:0`` turns it off), and the study's rules
    (evaluate/study.py: ``+adapt:T``, ``+heading:H``, ``+section:S``, ``+sibling:H``, …).
    The ranking is None where the configuration names none (the shelf's own)."""
    config, *options = config.split("+")
    fusion_options: dict[str, Any] = {}
    study_options: dict[str, Any] = {}
    for option in options:
        name, _, value = option.partition(":")
        known = name in OPTIONS or name in STUDY_OPTIONS
        if not known or not (name in ANY_MODE or config.startswith("hybrid")):
            raise InvalidInput(
                f"Unknown option {option!r}; use +strong:T, +adapt:T, +heading:H, "
                "+section:S, +exact:1, +perdoc:N, +repeats:N or +sibling:H"
            )
        try:
            number = float(value)
        except ValueError:
            raise InvalidInput(f"Bad number in {option!r}") from None
        if number < 0:
            raise InvalidInput(f"{option!r} cannot be negative")
        into = fusion_options if name in OPTIONS else study_options
        field = OPTIONS.get(name) or STUDY_OPTIONS[name]
        if name in ("exact", "agree"):
            into[field] = bool(number)
        elif name in ("top", "few", "perdoc", "repeats"):
            into[field] = int(number)
        else:
            into[field] = number
    mode, fusion = _parse_base(config)
    if fusion_options:
        fusion = dataclasses.replace(fusion or FusionSettings(), **fusion_options)
    if study_options:
        return mode, study_ranking(fusion or FusionSettings(), Study(**study_options))
    return mode, None if fusion is None else product(fusion)


def _parse_base(config: str) -> tuple[str, FusionSettings | None]:
    parts = config.split(":")
    mode = parts[0]
    if mode not in SEARCH_MODES or (len(parts) > 1 and mode != "hybrid") or len(parts) > 5:
        raise InvalidInput(
            f"Bad configuration {config!r}; use lexical, vector, hybrid, hybrid:rrf, "
            "hybrid:convex:0.7 or hybrid:convex:0.7:5:1.0"
        )
    if len(parts) == 1:
        return mode, None
    method = parts[1]
    if method not in ("rrf", "convex"):
        raise InvalidInput(f"Unknown fusion {method!r} in {config!r}; use rrf or convex")
    base = FusionSettings()
    try:
        weight = float(parts[2]) if len(parts) >= 3 else base.vector_weight
        docs = int(parts[3]) if len(parts) >= 4 else base.feedback_docs
        strength = float(parts[4]) if len(parts) == 5 else base.feedback_weight
    except ValueError:
        raise InvalidInput(f"Bad number in {config!r}") from None
    if not 0.0 <= weight <= 1.0:
        raise InvalidInput(f"The vector weight in {config!r} must be between 0 and 1")
    if docs < 0 or strength < 0:
        raise InvalidInput(f"Feedback settings in {config!r} cannot be negative")
    return mode, dataclasses.replace(
        base,
        method=method,
        vector_weight=weight,
        lexical_weight=1 - weight,
        feedback_docs=docs,
        feedback_weight=strength,
    )


def paired_randomization_test(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 10_000, seed: int = 7
) -> float:
    """Two-sided p-value that the mean per-query difference ``b - a`` is zero: the
    fraction of random sign flips of the differences whose mean is at least as far from
    zero as the one observed (deterministic for a given seed)."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    if not diffs:
        return 1.0
    observed = abs(sum(diffs))
    rng = random.Random(seed)
    extreme = sum(
        abs(sum(d if rng.random() < 0.5 else -d for d in diffs)) >= observed - 1e-12
        for _ in range(rounds)
    )
    return (extreme + 1) / (rounds + 1)


class Measured(Protocol):
    """An evaluation run: its summary, per-query figures and which metrics it has."""

    @property
    def dataset(self) -> str: ...
    @property
    def queries(self) -> int: ...
    @property
    def per_query(self) -> Sequence[object]: ...
    def as_json(self) -> dict[str, Any]: ...
    def metrics(self) -> tuple[tuple[str, str], ...]: ...


def compare(a: Measured, b: Measured) -> dict[str, Any]:
    """``b`` against ``a``, query by query, with the paired test's p-value per metric."""
    out: dict[str, Any] = {
        "dataset": a.dataset,
        "queries": a.queries,
        "a": a.as_json(),
        "b": b.as_json(),
        "difference": differences(a, b),
    }
    return out


def differences(a: Measured, b: Measured) -> dict[str, dict[str, Any]]:
    """Per metric of ``a``: the mean difference ``b - a``, the paired test's p-value and
    how many queries ``b`` does better and worse on (both runs over the same queries)."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in a.metrics():
        xs = [float(getattr(q, attr)) for q in a.per_query]
        ys = [float(getattr(q, attr)) for q in b.per_query]
        out[name] = {
            "delta": round(statistics.fmean(ys) - statistics.fmean(xs), 4) if xs else 0.0,
            "p_value": round(paired_randomization_test(xs, ys), 4),
            "better": sum(y > x for x, y in zip(xs, ys, strict=True)),
            "worse": sum(y < x for x, y in zip(xs, ys, strict=True)),
        }
    return out


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise InvalidInput(f"{path}:{n}: not JSON ({exc.msg})") from None
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror or exc}") from None
    return rows


def load_beir(path: str | Path) -> Dataset:
    root = Path(path).expanduser()
    for need in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        if not (root / need).is_file():
            raise InvalidInput(f"{root} is not a BEIR dataset: {need} is missing")
    corpus = [
        (str(r["_id"]), str(r.get("title") or ""), str(r.get("text") or ""))
        for r in _read_jsonl(root / "corpus.jsonl")
    ]
    queries = {str(r["_id"]): str(r["text"]) for r in _read_jsonl(root / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and parts[0] == "query-id":
                continue
            if len(parts) != 3:
                raise InvalidInput(f"qrels line {n + 1}: expected 3 tab-separated fields")
            qid, did, grade = parts[0], parts[1], int(parts[2])
            if grade > 0:
                qrels.setdefault(qid, {})[did] = grade
    queries = {q: t for q, t in queries.items() if q in qrels}
    return Dataset(root.name, root, corpus, queries, qrels)


def _doc_name(corpus_id: str) -> str:
    # Corpus ids may hold any character; the name is only a label, hashed for safety.
    return hashlib.sha256(corpus_id.encode()).hexdigest()[:20] + ".md"


def build_index(shelf: Shelf, ds: Dataset, progress: Progress | None = None) -> dict[str, str]:
    """Index the corpus into ``shelf`` (once) and make its query model ready (queries
    embedded as a CLI search's and a server's are); returns document id -> corpus id."""
    items = [
        (_doc_name(cid), (f"# {title}\n\n{text}" if title else text).encode("utf-8"), title or None)
        for cid, title, text in ds.corpus
    ]
    if shelf.store.get_meta("eval_index") != INDEX_VERSION:
        shelf.add_documents(items, progress=progress)
        shelf.store.set_meta("eval_index", INDEX_VERSION)
    shelf.maintain_indexes()  # the engines a cached index was built without, built now
    shelf.prepare_query_model()
    from docshelf.model import document_id, fingerprint

    return {
        document_id(fingerprint(data)): cid
        for (_, data, _), (cid, _, _) in zip(items, ds.corpus, strict=True)
    }


def engines_of(shelf: Shelf) -> dict[str, str]:
    """Which engine answered each list (``status``'s paths), for an eval's report."""
    status = shelf.status()
    return {
        "lexical": str(status.lexical_index.get("path", "native")),
        "vector": str(status.vector_index.get("path", "native")),
    }


def eval_settings(home: Path, model: str, main: Settings | None = None) -> Settings:
    """Settings of an evaluation index at ``home``: its own SQLite file, the given model,
    the engines ``main`` names (DOCSHELF_SEARCH_URL, DOCSHELF_VECTOR_URL; each library its
    own collections, and its own files for an engine only one process may open), no
    enrichment (it would change headers and concepts under the measurement)."""
    vector_url = main.vector_url if main else None
    settings = Settings(
        home,
        f"sqlite:///{home / 'docshelf.db'}",
        embedder=model,
        vector_url=vector_url,
        search_url=main.search_url if main else None,
    )
    if one_process_engine(settings):  # files only one process opens: the library's own
        scheme = (vector_url or "").split(":", 1)[0]
        name = "vectors.db" if scheme == "milvus" else "vectors"
        settings = dataclasses.replace(settings, vector_url=f"{scheme}://{home / name}")
    if "enrich" in {f.name for f in dataclasses.fields(Settings)}:
        off: dict[str, Any] = {"enrich": "off"}
        settings = dataclasses.replace(settings, **off)
    return settings


def eval_home(home: Path, ds: Dataset, model: str, variant: str = "") -> Path:
    """Where the index of one (dataset, model, variant) is cached; a variant names how the
    corpus was laid out and chunked (e.g. ``long-no-header``), "" for one document per
    passage with the production chunker."""
    tail = f"-{variant}" if variant else ""
    return home / "eval" / f"{ds.name}-{ds.key()}-{model}{tail}-v{INDEX_VERSION}"


def ndcg_at_k(ranked: Sequence[T], grades: Mapping[T, int], k: int) -> float:
    """nDCG with linear gains (as trec_eval's ndcg_cut)."""
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[T], grades: Mapping[T, int], k: int) -> float:
    return len(set(ranked[:k]) & set(grades)) / len(grades) if grades else 0.0


def mrr_at_k(ranked: Sequence[T], grades: Mapping[T, int], k: int) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in grades:
            return 1.0 / (i + 1)
    return 0.0


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_queries(
    shelf: Shelf, ds: Dataset, mode: str, k: int
) -> Iterator[tuple[str, str, SearchResult, float]]:
    """Every query of ``ds`` searched with configuration ``mode`` (a search mode, with
    fusion settings if any): (query id, text, result, ms). The shelf's own fusion
    settings are restored afterwards."""
    limit = min(200, max(k * 5, 10))
    for (qid, text), result, ms in search_each(shelf, ds.queries.items(), mode, limit):
        yield qid, text, result, ms


def search_each(
    shelf: Shelf, queries: Iterable[tuple[T, str]], config: str, limit: int
) -> Iterator[tuple[tuple[T, str], SearchResult, float]]:
    """Each ``(key, text)`` searched with ``config`` (a search mode, with fusion settings
    if any) for ``limit`` hits: (the pair, result, ms). The shelf's own fusion settings
    are restored afterwards."""
    search_mode, ranking = parse_config(config)
    saved = shelf.ranking
    if ranking is not None:
        shelf.ranking = ranking
    try:
        for item in queries:
            t = time.perf_counter()
            result = shelf.search(item[1], limit=limit, mode=search_mode)
            yield item, result, (time.perf_counter() - t) * 1000
    finally:
        shelf.ranking = saved


def evaluate(
    shelf: Shelf,
    ds: Dataset,
    doc_to_corpus: dict[str, str],
    *,
    mode: str = "hybrid",
    k: int = 10,
) -> EvalResult:
    """Run every query with configuration ``mode`` (see ``parse_config``); hits are
    grouped by document (best snippet first). Keeps per-query figures, the recall of
    the candidate stage (to tell ranking changes from recall changes) and the latency
    of each stage."""
    per_query: list[QueryResult] = []
    actual_mode = parse_config(mode)[0]
    for qid, text, result, ms in run_queries(shelf, ds, mode, k):
        actual_mode = result.mode
        ranked = list(dict.fromkeys(doc_to_corpus.get(h.document.id, "") for h in result.hits))
        candidates = list(
            dict.fromkeys(doc_to_corpus.get(shelf_doc, "") for shelf_doc in result.candidates)
        )
        grades = ds.qrels[qid]
        per_query.append(
            QueryResult(
                query_id=qid,
                query=text,
                ndcg=ndcg_at_k(ranked, grades, k),
                recall=recall_at_k(ranked, grades, k),
                mrr=mrr_at_k(ranked, grades, k),
                ms=ms,
                candidate_recall={n: recall_at_k(candidates, grades, n) for n in (50, 100)},
                stages_ms=dict(result.timings_ms),
            )
        )
    n = len(per_query)
    times = [q.ms for q in per_query]
    return EvalResult(
        dataset=ds.name,
        mode=actual_mode,
        queries=n,
        k=k,
        ndcg=statistics.fmean(q.ndcg for q in per_query) if n else 0.0,
        recall=statistics.fmean(q.recall for q in per_query) if n else 0.0,
        mrr=statistics.fmean(q.mrr for q in per_query) if n else 0.0,
        p50_ms=_percentile(times, 50),
        p95_ms=_percentile(times, 95),
        config=mode,
        per_query=tuple(per_query),
    )
