"""The packaged model adapted to a library (issue 36, vocabulary mismatch): training pairs
made from the library's own snippets, and a short fine-tune of the model on the CPU.

Two kinds of pair, neither needing a question or a label:

- a section's **title and heading** to its text (the heading's lines left out of it), what a
  note's author wrote as the name of what follows;
- one **sentence** of a snippet to the rest of it (the inverse cloze task; the sentence is
  left in one time in ten, so that a passage holding the words stays a match).

The loss is the in-batch one (each query's own passage against the batch's others,
multiple-negatives ranking), AdamW with a linear warm-up and decay. ``fine_tune`` writes a
copy of the packaged model's folder with the new weights, which ``LocalEmbedder`` reads as
it reads the packaged one. Measured in docs/benchmarks/docqa-dev.md ("The model adapted to
the library"; ``bench/adapt_model.py``): better on docqa-dev, worse on dbpedia-5k, so no
library uses it yet.
"""

from __future__ import annotations

import random
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from docshelf.chunk.header import header_parts
from docshelf.plaintext import SENTENCE_BOUNDARY

_HEADING_LINE = re.compile(r"\A(?:\s*#{1,6} [^\n]*\n+)+")


@dataclass(frozen=True)
class Pair:
    query: str
    passage: str


@dataclass(frozen=True)
class AdaptSettings:
    pairs: int = 8000  # at most; 250 steps of 32 (20 minutes on two busy cores)
    batch: int = 32
    epochs: int = 1
    learning_rate: float = 2e-5
    max_tokens: int = 128  # a passage's tokens read in training (embedding reads 256)
    min_words: int = 12  # a passage shorter than this teaches nothing
    seed: int = 0


@dataclass(frozen=True)
class AdaptReport:
    pairs: int
    steps: int
    seconds: float
    loss: float  # the last steps' running mean


def training_pairs(
    snippets: Iterable[tuple[str, str]], settings: AdaptSettings = AdaptSettings()
) -> list[Pair]:
    """Pairs from ``(header, text)`` snippets: a heading's and a sentence's each, shuffled
    (by ``settings.seed``) and cut to ``settings.pairs``."""
    rnd = random.Random(settings.seed)
    pairs: list[Pair] = []
    for header, text in snippets:
        text = text.strip()
        if len(text.split()) < settings.min_words:
            continue
        named = _heading_pair(header, text, settings.min_words)
        if named is not None:
            pairs.append(named)
        sentences = [s for s in SENTENCE_BOUNDARY.split(text) if 6 <= len(s.split()) <= 40]
        if sentences:
            sentence = rnd.choice(sentences)
            rest = text if rnd.random() < 0.1 else " ".join(text.replace(sentence, " ").split())
            if len(rest.split()) >= 8:
                pairs.append(Pair(sentence, f"{header}\n\n{rest}" if header else rest))
    rnd.shuffle(pairs)
    return pairs[: settings.pairs]


def _heading_pair(header: str, text: str, min_words: int) -> Pair | None:
    title, path = header_parts(header)
    query = " ".join(p for p in (title, path[-1] if path else "") if p)
    body = _HEADING_LINE.sub("", text)
    if not query or len(body.split()) < min_words:
        return None
    return Pair(query[:200], body)


def fine_tune(
    model_dir: Path,
    pairs: list[Pair],
    out: Path,
    settings: AdaptSettings = AdaptSettings(),
    on_step: Callable[[int, int, float], None] | None = None,
) -> AdaptReport:
    """Fine-tune the model in ``model_dir`` on ``pairs`` and write it to ``out`` (a copy of
    the folder, the weights replaced); ``on_step`` is told (step, steps, running loss)."""
    import torch
    from sentence_transformers import SentenceTransformer

    if len(pairs) < settings.batch:
        raise ValueError(f"{len(pairs)} training pairs: at least {settings.batch} are needed")
    torch.manual_seed(settings.seed)
    model = SentenceTransformer(str(model_dir), device="cpu")
    model.max_seq_length = settings.max_tokens
    model.train()
    per_epoch = len(pairs) // settings.batch
    steps = settings.epochs * per_epoch
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    warm = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )

    def embed(texts: list[str]) -> torch.Tensor:
        features = model.preprocess(texts)
        return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)

    started, step, running = time.monotonic(), 0, 0.0
    order = list(pairs)
    for epoch in range(settings.epochs):
        random.Random(settings.seed + epoch).shuffle(order)
        for start in range(0, per_epoch * settings.batch, settings.batch):
            batch = order[start : start + settings.batch]
            scores = 20.0 * embed([p.query for p in batch]) @ embed([p.passage for p in batch]).T
            loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            schedule.step()
            step += 1
            running = loss.item() if step == 1 else 0.95 * running + 0.05 * loss.item()
            if on_step is not None:
                on_step(step, steps, running)
    _write(model_dir, model, out)
    return AdaptReport(len(pairs), step, time.monotonic() - started, running)


def _write(model_dir: Path, model: object, out: Path) -> None:
    """``out``: the packaged folder as it is (tokenizer, pooling, normalising), the encoder's
    weights the trained ones; written beside, then renamed into place."""
    tmp = out.with_name(f"{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(model_dir, tmp)
    encoder = model[0].auto_model  # type: ignore[index]
    encoder.save_pretrained(str(tmp / "weights"), safe_serialization=True)
    (tmp / "weights" / "model.safetensors").replace(tmp / "model.safetensors")
    shutil.rmtree(tmp / "weights")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
