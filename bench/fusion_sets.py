"""Fusion judged on every dev set at once, by its worst case (issue 15).

    DOCSHELF_HOME=DIR .venv/bin/python bench/fusion_sets.py CONFIG [CONFIG ...] \\
        [--docqa ../shared/data/docqa-dev] [--beir ../shared/data/dbpedia-5k]

Each CONFIG is a hybrid configuration as ``docshelf eval --mode`` takes it; the
first is the reference. The indexes are the ones ``docshelf eval`` caches under
``$DOCSHELF_HOME`` (built when missing), so the figures equal the CLI's. For
each configuration it prints:

- docqa: hit@1, hit@5 and MRR@10 over all questions, and the worst group (a
  kind or a collection) by how many questions its hit@1 and its MRR@10 lose to
  the better of lexical and vector alone in that group (negative = lost);
- dbpedia-5k passages: nDCG@10; long files: hit@1, MRR@10, nDCG@10;
- the paired test's p against the reference (docqa MRR@10, passage nDCG@10,
  long-file MRR@10).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from pathlib import Path
from typing import Any

from docshelf.config import Settings
from docshelf.embed import Embedder, make_embedder
from docshelf.evaluate.beir import (
    EvalResult,
    build_index,
    eval_home,
    eval_settings,
    evaluate,
    load_beir,
    paired_randomization_test,
)
from docshelf.evaluate.docqa import DocqaReport, DocqaRun, run_docqa
from docshelf.evaluate.docqa_set import load_docqa
from docshelf.evaluate.long import LongEvalResult, build_long_index, evaluate_long, long_corpus
from docshelf.shelf import Shelf

GROUPS = ("kind", "collection")


def worst_group(report: DocqaReport, config: str, attr: str) -> tuple[float, str]:
    """The group where ``config`` trails the better single retriever most, in questions."""
    runs = report.runs
    worst = (float("inf"), "")
    for field in GROUPS:
        names = sorted({getattr(q, field) for q in runs[config].per_query})
        for name in names:

            def total(run: DocqaRun, group: str = name, by: str = field) -> float:
                return float(
                    sum(getattr(q, attr) for q in run.per_query if getattr(q, by) == group)
                )

            best_single = max(total(runs["lexical"]), total(runs["vector"]))
            margin = total(runs[config]) - best_single
            worst = min(worst, (margin, f"{field}={name}"))
    return worst


def mean(run: Any, attr: str) -> float:
    return statistics.fmean(getattr(q, attr) for q in run.per_query)


def p_value(a: Any, b: Any, attr: str) -> float:
    xs = [float(getattr(q, attr)) for q in a.per_query]
    ys = [float(getattr(q, attr)) for q in b.per_query]
    return paired_randomization_test(xs, ys)


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--docqa", type=Path, default=root.parent / "shared/data/docqa-dev")
    ap.add_argument("--beir", type=Path, default=root.parent / "shared/data/dbpedia-5k")
    ap.add_argument("--collections", nargs="+", help="only these docqa collections")
    ap.add_argument("--docqa-only", action="store_true", help="skip the BEIR sets")
    args = ap.parse_args()
    settings = Settings.from_env()
    embedder = make_embedder(settings.embedder)
    configs: list[str] = args.configs
    docqa = load_docqa(args.docqa)
    if args.collections:
        docqa = dataclasses.replace(
            docqa,
            questions=tuple(q for q in docqa.questions if q.collection in args.collections),
            collections={c: p for c, p in docqa.collections.items() if c in args.collections},
        )
    report = run_docqa(settings, docqa, embedder=embedder, mode=configs[0], against=configs[1:])
    passages: dict[str, EvalResult] = {}
    longs: dict[str, LongEvalResult] = {}
    if not args.docqa_only:
        passages, longs = beir_runs(settings, args.beir, embedder, configs)
    show(report, passages, longs, configs)


def beir_runs(
    settings: Settings, path: Path, embedder: Embedder | None, configs: list[str]
) -> tuple[dict[str, EvalResult], dict[str, LongEvalResult]]:
    model = embedder.model_id if embedder else "none"
    ds = load_beir(path)
    with Shelf(
        settings=eval_settings(eval_home(settings.home, ds, model), model), embedder=embedder
    ) as shelf:
        mapping = build_index(shelf, ds)
        passages = {c: evaluate(shelf, ds, mapping, mode=c) for c in configs}
    long_home = eval_home(settings.home, ds, model, "long")
    with Shelf(settings=eval_settings(long_home, model), embedder=embedder) as shelf:
        corpus = long_corpus(ds)
        files = build_long_index(shelf, corpus)
        longs = {c: evaluate_long(shelf, ds, corpus, files, mode=c) for c in configs}
    return passages, longs


def show(
    report: DocqaReport,
    passages: dict[str, EvalResult],
    longs: dict[str, LongEvalResult],
    configs: list[str],
) -> None:
    """One line per configuration (lexical and vector first, for reference)."""
    ref = configs[0]
    print(
        f"{'config':<40} {'hit@1':>6} {'hit@5':>6} {'MRR':>6}  {'worst hit@1 (questions)':<30}"
        f" {'worst MRR (questions)':<30} {'p MRR':>6} | {'nDCG':>6} {'p':>6}"
        f" | {'long h@1':>8} {'MRR':>6} {'nDCG':>6} {'p MRR':>6}"
    )
    for c in ["lexical", "vector", *configs]:
        run = report.runs[c]
        line = f"{c:<40} {mean(run, 'hit1'):6.3f} {mean(run, 'hit5'):6.3f} {mean(run, 'mrr'):6.3f}"
        if c in configs:
            h1, h1g = worst_group(report, c, "hit1")
            mr, mrg = worst_group(report, c, "mrr")
            p = f"{p_value(report.runs[ref], run, 'mrr'):6.3f}" if c != ref else ""
            line += f"  {h1:+5.1f} {h1g:<24} {mr:+5.2f} {mrg:<24} {p:>6}"
        if c in passages:
            p = f"{p_value(passages[ref], passages[c], 'ndcg'):6.3f}" if c != ref else ""
            line += f" | {passages[c].ndcg:6.3f} {p:>6}"
            lr = longs[c]
            p = f"{p_value(longs[ref], lr, 'mrr'):6.3f}" if c != ref else ""
            line += (
                f" | {mean(lr, 'hit1'):8.3f} {mean(lr, 'mrr'):6.3f} {mean(lr, 'ndcg'):6.3f} {p:>6}"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
