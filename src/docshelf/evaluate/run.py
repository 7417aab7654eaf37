"""What ``docshelf eval`` runs: pick the data's format, index it into cached eval
libraries, measure the configurations asked for, compare them, write the per-query
lines. The command only parses its options and renders the result."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.shelf import Progress

# A progress display for one labelled step (the CLI's bar; nothing in JSON mode).
ProgressScope = Callable[[str], AbstractContextManager[Progress | None]]
EvalKind = Literal["docqa", "answers", "beir", "comparison", "variants"]


@dataclass(frozen=True)
class EvalOptions:
    dataset: Path
    mode: str = "hybrid"
    against: str | None = None
    k: int = 10
    per_query: Path | None = None
    long_doc: bool = False
    header: str = "on"
    data_format: str = "auto"
    answers: bool = False  # a docqa set's answers scored, not its search


@dataclass(frozen=True)
class EvalOutcome:
    result: dict[str, Any]
    kind: EvalKind  # docqa; one BEIR run; two BEIR runs compared; a layout/header variant


def eval_format(dataset: Path, data_format: str) -> str:
    """``beir`` or ``docqa``: as asked, or (``auto``) what the folder holds."""
    from docshelf.evaluate.docqa_set import is_docqa

    if data_format not in ("auto", "beir", "docqa"):
        raise InvalidInput(f"Unknown --format {data_format!r}; use auto, beir or docqa")
    if data_format == "auto":
        return "docqa" if is_docqa(dataset) else "beir"
    return data_format


def run_eval(
    options: EvalOptions, settings: Callable[[], Settings], progress: ProgressScope
) -> EvalOutcome:
    """One ``docshelf eval``. ``settings`` gives the library's settings (where eval
    libraries are cached, which model embeds); it is asked for only once the options
    are known to be sound."""
    o = options
    if eval_format(o.dataset, o.data_format) == "docqa":
        if o.long_doc or o.header != "on":
            raise InvalidInput("--long-doc and --header apply to BEIR data, not docqa")
        if o.answers:
            return EvalOutcome(_answers(o, settings(), progress), "answers")
        return EvalOutcome(_docqa(o, settings(), progress), "docqa")
    if o.answers:
        raise InvalidInput("--answers applies to a docqa set (qa.jsonl and answers.jsonl)")
    if o.long_doc or o.header != "on":
        return EvalOutcome(_variants(o, settings, progress), "variants")
    return _beir(o, settings, progress)


def _beir(o: EvalOptions, settings: Callable[[], Settings], progress: ProgressScope) -> EvalOutcome:
    from docshelf.embed import make_embedder
    from docshelf.evaluate.beir import (
        build_index,
        compare,
        engines_of,
        eval_home,
        eval_settings,
        evaluate,
        load_beir,
        parse_config,
    )
    from docshelf.shelf import Shelf

    for config in (o.mode, o.against):
        if config is not None:
            parse_config(config)
    ds = load_beir(o.dataset)
    main = settings()
    embedder = make_embedder(main.embedder)
    model = embedder.model_id if embedder else "none"
    home = eval_home(main.home, ds, model)
    with (
        Shelf(settings=eval_settings(home, model, main), embedder=embedder) as shelf,
        progress("Indexing corpus") as step,
    ):
        mapping = build_index(shelf, ds, step)
        first = evaluate(shelf, ds, mapping, mode=o.mode, k=o.k)
        second = evaluate(shelf, ds, mapping, mode=o.against, k=o.k) if o.against else None
        engines = engines_of(shelf)
    if o.per_query is not None:
        write_per_query(o.per_query, first, second)
    if second is not None:
        return EvalOutcome({**compare(first, second), "engines": engines}, "comparison")
    return EvalOutcome({**first.as_json(), "engines": engines}, "beir")


def _docqa(o: EvalOptions, settings: Settings, progress: ProgressScope) -> dict[str, Any]:
    """A docqa set: one cached library per collection, every mode in one run."""
    from docshelf.embed import make_embedder
    from docshelf.evaluate.docqa import run_docqa, write_runs

    with progress("Indexing collections") as step:
        report = run_docqa(
            settings,
            o.dataset,
            embedder=make_embedder(settings.embedder),
            mode=o.mode,
            against=[o.against] if o.against else [],
            k=o.k,
            progress=step,
        )
    result = report.as_json()
    if o.per_query is not None:
        result["run_files"] = [str(p) for p in write_runs(o.per_query, report)]
    return result


def _answers(o: EvalOptions, settings: Settings, progress: ProgressScope) -> dict[str, Any]:
    """A docqa set's answers: every question asked in its collection's library, scored."""
    from docshelf.embed import make_embedder
    from docshelf.evaluate.answers import run_answers

    with progress("Indexing collections") as step:
        result = run_answers(
            settings, o.dataset, embedder=make_embedder(settings.embedder), progress=step
        )
    if o.per_query is not None:
        try:
            o.per_query.write_text(
                "".join(json.dumps(r) + "\n" for r in result["per_question"]), encoding="utf-8"
            )
        except OSError as exc:
            raise InvalidInput(f"Cannot write {o.per_query}: {exc.strerror or exc}") from None
    return result


def _variants(
    o: EvalOptions, settings: Callable[[], Settings], progress: ProgressScope
) -> dict[str, Any]:
    """``--long-doc`` and ``--header off|compare``: one cached index per layout (passages
    or long files) and header setting."""
    from docshelf.evaluate.long import run_variants

    if o.header not in ("on", "off", "compare"):
        raise InvalidInput(f"Unknown --header {o.header!r}; use on, off or compare")
    if o.header == "compare" and o.against is not None:
        raise InvalidInput("--header compare already compares two runs; drop --against")
    main = settings()
    with progress("Indexing corpus") as step:
        first, second, result = run_variants(
            main,
            o.dataset,
            mode=o.mode,
            against=o.against,
            k=o.k,
            long_doc=o.long_doc,
            header=o.header,
            progress=step,
        )
    if o.per_query is not None:
        write_per_query(o.per_query, first, second)
    return result


def write_per_query(path: Path, first: Any, second: Any) -> None:
    """One JSON line per query (both runs side by side when two were compared); a run
    is an ``EvalResult`` or a ``LongEvalResult``."""
    try:
        with path.open("w", encoding="utf-8") as fh:
            for n, q in enumerate(first.per_query):
                row = {"config": first.config, **q.as_json(first.k)}
                if second is not None:
                    row = {
                        "a": row,
                        "b": {"config": second.config, **second.per_query[n].as_json(second.k)},
                    }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise InvalidInput(f"Cannot write {path}: {exc.strerror or exc}") from None
