"""``docshelf eval`` on a docqa set (``docqa_set``): each collection indexed into its own
cached library, every question searched in its own collection with lexical, vector and
a hybrid configuration (and optionally a previous one) in one run, scored overall, per
collection and per kind, with the paired test of the hybrid against each other run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docshelf.config import Settings
from docshelf.embed import Embedder
from docshelf.errors import InvalidInput
from docshelf.evaluate.beir import (
    INDEX_VERSION,
    _percentile,
    differences,
    engines_of,
    eval_settings,
    parse_config,
    search_each,
)
from docshelf.evaluate.docqa_set import (
    Cited,
    DocqaQueryResult,
    DocqaSet,
    as_result,
    grouped,
    load_docqa,
    metric_names,
    ranks,
)
from docshelf.model import Hit
from docshelf.shelf import Progress, Shelf


@dataclass(frozen=True)
class DocqaRun:
    """Every question of a set searched with one configuration."""

    dataset: str
    config: str
    mode: str  # the mode search ran in ("lexical" when no model could embed the query)
    k: int
    per_query: tuple[DocqaQueryResult, ...]
    notice: str | None = None

    @property
    def queries(self) -> int:
        return len(self.per_query)

    def metrics(self) -> tuple[tuple[str, str], ...]:
        return metric_names(self.k)

    def as_json(self) -> dict[str, Any]:
        times = [q.ms for q in self.per_query]
        out: dict[str, Any] = {"config": self.config, "mode": self.mode}
        out.update(grouped(self.per_query, self.k))
        out.update(p50_ms=round(_percentile(times, 50), 2), p95_ms=round(_percentile(times, 95), 2))
        if self.notice:
            out["notice"] = self.notice
        return out


def docqa_configs(mode: str, against: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The hybrid configuration under test and every configuration of the run: lexical,
    vector, that hybrid, and those ``against`` it (a previous default, say)."""
    if parse_config(mode)[0] != "hybrid":
        raise InvalidInput(
            f"--mode {mode!r}: a docqa run always covers lexical, vector and hybrid; "
            "--mode names the hybrid configuration (hybrid, hybrid:rrf, hybrid:convex:0.8:0, …)"
        )
    for other in against:
        parse_config(other)
    return mode, list(dict.fromkeys(["lexical", "vector", mode, *against]))


def collection_home(home: Path, ds: DocqaSet, collection: str, model: str) -> Path:
    """Where one collection's library is cached: by the folder (resolved) and the model;
    a later run syncs it, so only changed files are indexed again."""
    folder = str(ds.collections[collection].resolve())
    key = hashlib.sha256(folder.encode()).hexdigest()[:12]
    return home / "eval" / f"docqa-{collection}-{key}-{model}-v{INDEX_VERSION}"


def cited(hit: Hit) -> Cited:
    path = hit.citation.heading_path
    return Cited(
        path=hit.document.rel_path,
        heading=path[-1] if path else None,
        page_start=hit.citation.page_start,
        page_end=hit.citation.page_end,
    )


@dataclass(frozen=True)
class DocqaReport:
    dataset: str
    k: int
    model: str
    mode: str  # the hybrid configuration under test
    runs: dict[str, DocqaRun]  # by configuration, in run order
    collections: dict[str, dict[str, Any]]  # what each library holds

    def comparisons(self) -> list[dict[str, Any]]:
        """The hybrid configuration against each other one, with the paired test."""
        test = self.runs[self.mode]
        return [
            {"a": name, "b": self.mode, "difference": differences(run, test)}
            for name, run in self.runs.items()
            if name != self.mode
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "format": "docqa",
            "questions": next(iter(self.runs.values())).queries,
            "k": self.k,
            "model": self.model,
            "mode": self.mode,
            "collections": self.collections,
            "runs": {name: run.as_json() for name, run in self.runs.items()},
            "comparisons": self.comparisons(),
        }


def run_docqa(
    settings: Settings,
    dataset: str | Path | DocqaSet,
    *,
    embedder: Embedder | None,
    mode: str = "hybrid",
    against: Sequence[str] = (),
    k: int = 10,
    progress: Progress | None = None,
) -> DocqaReport:
    """``docshelf eval`` on a docqa set: each collection indexed (or synced) into its own
    cached library, each question searched in its own collection with every
    configuration, the cited places scored."""
    mode, configs = docqa_configs(mode, against)
    ds = dataset if isinstance(dataset, DocqaSet) else load_docqa(dataset)
    model = embedder.model_id if embedder else "none"
    order = {q.id: n for n, q in enumerate(ds.questions)}
    rows: dict[str, list[DocqaQueryResult]] = {c: [] for c in configs}
    modes: dict[str, str] = {c: parse_config(c)[0] for c in configs}
    notices: dict[str, str | None] = dict.fromkeys(configs)
    libraries: dict[str, dict[str, Any]] = {}
    for collection in ds.collections:
        home = collection_home(settings.home, ds, collection, model)
        with Shelf(settings=eval_settings(home, model, settings), embedder=embedder) as shelf:
            shelf.add(ds.collections[collection], progress)
            shelf.prepare_query_model()  # queries embedded as a CLI search's are
            status = shelf.status()
            libraries[collection] = {
                "documents": status.documents,
                "snippets": status.snippets,
                "failed": status.failure_count,
                "engines": engines_of(shelf),
            }
            asked = [(q, q.question) for q in ds.questions if q.collection == collection]
            for config in configs:
                # the first k hits, as `docshelf search --limit k` shows them
                for (q, _), result, ms in search_each(shelf, asked, config, k):
                    modes[config], notices[config] = result.mode, result.notice
                    results = tuple(as_result(cited(h), q) for h in result.hits)
                    rank, file_rank = ranks(results, q, k)
                    row = DocqaQueryResult(
                        q.id, q.collection, q.kind, rank, file_rank, k, ms, results
                    )
                    rows[config].append(row)
    runs = {
        c: DocqaRun(
            ds.name,
            c,
            modes[c],
            k,
            tuple(sorted(rows[c], key=lambda r: order[r.query_id])),
            notices[c],
        )
        for c in configs
    }
    return DocqaReport(ds.name, k, model, mode, runs, libraries)


def write_runs(path: Path, report: DocqaReport) -> list[Path]:
    """One run file per configuration, beside ``path`` (``runs.jsonl`` →
    ``runs.hybrid.jsonl``, …): a line per question with its rank and its cited places in
    the scorer's form ``{"id", "results": [{"path", "heading", "page"}]}``."""
    written = []
    for name, run in report.runs.items():
        safe = re.sub(r"[^\w.-]", "-", name)
        target = path.with_name(f"{path.stem}.{safe}{path.suffix}")
        try:
            with target.open("w", encoding="utf-8") as fh:
                for q in run.per_query:
                    row = {"config": name, **q.as_json(report.k)}
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise InvalidInput(f"Cannot write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return written
