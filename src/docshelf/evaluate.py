"""Retrieval evaluation on BEIR-format data (``corpus.jsonl``, ``queries.jsonl``,
``qrels/test.tsv``): nDCG@k, recall@k and MRR@k at the document level.

Each passage becomes one Markdown document (``# title`` then the text) indexed
through the ordinary pipeline. The index is built once per (dataset, model,
chunker) and kept under ``$DOCSHELF_HOME/eval/`` so the modes can be compared
on the same index without re-embedding.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docshelf.errors import InvalidInput
from docshelf.shelf import Progress, Shelf

# Bump when chunking or indexing changes in a way that invalidates cached eval indexes.
INDEX_VERSION = "2"


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

    def as_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "queries": self.queries,
            f"ndcg@{self.k}": round(self.ndcg, 4),
            f"recall@{self.k}": round(self.recall, 4),
            f"mrr@{self.k}": round(self.mrr, 4),
            "p50_ms": round(self.p50_ms, 2),
            "p95_ms": round(self.p95_ms, 2),
            "mode": self.mode,
        }


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
    """Index the corpus into ``shelf`` (once); returns document id -> corpus id."""
    items = [
        (_doc_name(cid), (f"# {title}\n\n{text}" if title else text).encode("utf-8"), title or None)
        for cid, title, text in ds.corpus
    ]
    if shelf.store.get_meta("eval_index") != INDEX_VERSION:
        shelf.add_documents(items, progress=progress)
        shelf.store.set_meta("eval_index", INDEX_VERSION)
    from docshelf.model import document_id, fingerprint

    return {
        document_id(fingerprint(data)): cid
        for (_, data, _), (cid, _, _) in zip(items, ds.corpus, strict=True)
    }


def eval_home(home: Path, ds: Dataset, model: str) -> Path:
    return home / "eval" / f"{ds.name}-{ds.key()}-{model}-v{INDEX_VERSION}"


def ndcg_at_k(ranked: Sequence[str], grades: dict[str, int], k: int) -> float:
    """nDCG with linear gains (as trec_eval's ndcg_cut)."""
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], grades: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(grades)) / len(grades) if grades else 0.0


def mrr_at_k(ranked: Sequence[str], grades: dict[str, int], k: int) -> float:
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


def evaluate(
    shelf: Shelf,
    ds: Dataset,
    doc_to_corpus: dict[str, str],
    *,
    mode: str = "hybrid",
    k: int = 10,
    search: Callable[..., Any] | None = None,
) -> EvalResult:
    """Run every query; hits are grouped by document (best snippet first)."""
    run = search or shelf.search
    ndcgs, recalls, mrrs, times = [], [], [], []
    for qid, text in ds.queries.items():
        t = time.perf_counter()
        result = run(text, limit=min(200, k * 5), mode=mode)
        times.append((time.perf_counter() - t) * 1000)
        ranked = list(dict.fromkeys(doc_to_corpus.get(h.document.id, "") for h in result.hits))
        grades = ds.qrels[qid]
        ndcgs.append(ndcg_at_k(ranked, grades, k))
        recalls.append(recall_at_k(ranked, grades, k))
        mrrs.append(mrr_at_k(ranked, grades, k))
    n = len(ds.queries)
    return EvalResult(
        dataset=ds.name,
        mode=result.mode if n else mode,
        queries=n,
        k=k,
        ndcg=sum(ndcgs) / n if n else 0.0,
        recall=sum(recalls) / n if n else 0.0,
        mrr=sum(mrrs) / n if n else 0.0,
        p50_ms=_percentile(times, 50),
        p95_ms=_percentile(times, 95),
    )
