"""``docshelf eval DOCQA --answers``: every question of a docqa set asked (``ask``: the
offline answer, or the LLM's when DOCSHELF_LLM_URL names one), each in its own
collection's cached library, and the answers scored by ``answer_score``: accuracy, cited
accuracy, abstention; the report counts the answers each mode wrote (an LLM's answer that
could not be grounded is the offline one)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.errors import InvalidInput
from docshelf.evaluate.answer_score import Asked, correct, is_cited, table
from docshelf.evaluate.beir import eval_settings
from docshelf.evaluate.docqa import collection_home
from docshelf.evaluate.docqa_set import load_docqa
from docshelf.shelf import Shelf

if TYPE_CHECKING:
    from docshelf.config import Settings
    from docshelf.embed import Embedder
    from docshelf.shelf import Progress

ANSWERS_FILE = "answers.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InvalidInput(f"{path.parent} has no {path.name}: --answers needs its gold answers")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                raise InvalidInput(f"{path.name} line {n} is not JSON") from None
    return out


def _places(answer: Any, folder: Path) -> list[dict[str, Any]]:
    """The answer's citations as the set names places: path below the collection."""
    return [
        {
            "path": os.path.relpath(c.citation.path, folder).replace(os.sep, "/"),
            "heading": c.citation.heading_path[-1] if c.citation.heading_path else None,
            "page": c.citation.page_start,
            "page_end": c.citation.page_end,
        }
        for c in answer.citations
    ]


def run_answers(
    settings: Settings,
    dataset: str | Path,
    *,
    embedder: Embedder | None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every answerable question and every unanswerable one asked and scored."""
    ds = load_docqa(dataset)
    gold = {g["id"]: g for g in _lines(ds.path / ANSWERS_FILE)}
    missing = [q.id for q in ds.questions if q.id not in gold]
    if missing:
        raise InvalidInput(f"{ANSWERS_FILE} has no gold answer for {', '.join(missing[:5])}")
    unanswerable = [g for g in gold.values() if g.get("answerable") is False]
    model = embedder.model_id if embedder else "none"
    asked: list[Asked] = []
    modes: Counter[str] = Counter()
    for collection, folder in ds.collections.items():
        home = collection_home(settings.home, ds, collection, model)
        library = dataclasses.replace(eval_settings(home, model, settings), llm=settings.llm)
        with Shelf(settings=library, embedder=embedder) as shelf:
            shelf.add(folder, progress)
            shelf.prepare_query_model()
            for q in (q for q in ds.questions if q.collection == collection):
                answer = shelf.ask(q.question)
                modes[answer.mode] += 1
                right = answer.answered and correct(answer.answer, gold[q.id])
                places = [{"path": a.path, "heading": a.heading, "page": a.page} for a in q.answers]
                shown = tuple(_places(answer, folder))
                cited = right and is_cited(shown, places)
                asked.append(
                    Asked(q.id, collection, q.kind, True, answer.answered, right, cited).with_text(
                        answer.answer, shown
                    )
                )
            for u in (u for u in unanswerable if u.get("collection") == collection):
                answer = shelf.ask(str(u["question"]))
                modes[answer.mode] += 1
                kind = f"unanswerable {u.get('kind', '')}".strip()
                shown = tuple(_places(answer, folder))
                asked.append(
                    Asked(str(u["id"]), collection, kind, False, answer.answered).with_text(
                        answer.answer, shown
                    )
                )
    return {
        "dataset": ds.name,
        "format": "docqa-answers",
        "model": model,
        "answers": f"llm {settings.llm.model}" if settings.llm.url else "extractive",
        "modes": dict(sorted(modes.items())),
        "questions": len(asked),
        "scores": table(asked),
        "per_question": [a.as_run_line() for a in asked],
    }
