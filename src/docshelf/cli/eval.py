"""``docshelf eval``: the options and the tables; the runs are ``docshelf.evaluate.run``'s."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from docshelf.cli.command import Action, Outcome, Run, command, console, q


def _render_docqa(r: dict[str, Any]) -> None:
    from rich.table import Table

    k = r["k"]
    wanted = ("hit@1", "hit@3", "hit@5", f"hit@{k}", f"mrr@{k}", "hit@1-file", "hit@5-file")
    metrics = list(dict.fromkeys(wanted))
    for name, m in r["runs"].items():
        title = f"{r['dataset']}: {name} ({m['mode']})"
        table = Table("group", "n", *metrics, "none", title=title)
        groups = [("all", m["all"])]
        for by in ("collection", "kind"):
            groups += [(f"{by}={g}", v) for g, v in m[by].items()]
        for label, g in groups:
            cells = [f"{g[x]:.3f}" if x in g else "" for x in metrics]
            table.add_row(label, str(g["n"]), *cells, str(g["no_results"]))
        console.print(table)
        if m.get("notice"):
            console.print(m["notice"], style="yellow")
    if r["comparisons"]:
        title = "delta (p, paired randomisation test)"
        table = Table("comparison", *r["comparisons"][0]["difference"], title=title)
        for c in r["comparisons"]:
            cells = [f"{d['delta']:+.3f} ({d['p_value']:.2f})" for d in c["difference"].values()]
            table.add_row(f"{c['b']} vs {c['a']}", *cells)
        console.print(table)
    for name, lib in r["collections"].items():
        console.print(
            f"{name}: {lib['documents']} documents, {lib['snippets']} snippets, "
            f"{lib['failed']} failed"
        )


def _render_answers(r: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(
        "group",
        "answerable",
        "accuracy",
        "cited",
        "abstained",
        "unanswerable",
        "abstention recall",
        title=f"{r['dataset']}: {r['answers']} answers ({r['model']})",
    )
    scores = r["scores"]
    groups = [("all", scores["all"])]
    groups += [(f"collection={c}", s) for c, s in scores["collection"].items()]
    groups += [(f"kind={k}", s) for k, s in scores["kind"].items()]
    for name, s in groups:
        table.add_row(
            name,
            str(s["answerable"] or ""),
            f"{s['accuracy']:.3f}" if "accuracy" in s else "",
            f"{s['cited_accuracy']:.3f}" if "cited_accuracy" in s else "",
            f"{s['false_abstention']:.3f}" if "false_abstention" in s else "",
            str(s["unanswerable"] or ""),
            f"{s['abstention_recall']:.3f}" if "abstention_recall" in s else "",
        )
    console.print(table)
    written = ", ".join(f"{n} {mode}" for mode, n in r.get("modes", {}).items())
    if written:
        console.print(f"answers written: {written}")


def _render(o: Outcome) -> None:
    from rich.table import Table

    r = o.result
    if r.get("format") == "docqa":
        _render_docqa(r)
        return
    if r.get("format") == "docqa-answers":
        _render_answers(r)
        return
    if "difference" in r:
        table = Table(
            "metric", r["a"]["config"], r["b"]["config"], "delta", "p", title=r["dataset"]
        )
        for name, d in r["difference"].items():
            table.add_row(
                name, str(r["a"][name]), str(r["b"][name]), f"{d['delta']:+.4f}", str(d["p_value"])
            )
        console.print(table)
        return
    table = Table("metric", "value", title=f"{r['dataset']} ({r['mode']})")
    for key, value in r.items():
        if key not in ("dataset", "mode"):
            table.add_row(key, str(value))
    console.print(table)


@command("eval", render=_render)
def eval_(
    run: Run,
    dataset: Annotated[
        Path,
        typer.Argument(
            help="A BEIR-format dataset folder, or a docqa set (qa.jsonl beside corpora/)."
        ),
    ],
    mode: Annotated[
        str,
        typer.Option(
            help="lexical, vector, hybrid, hybrid:rrf, hybrid:convex:W (vector weight) or "
            "hybrid:convex:W:M:B (feedback from the top M snippets with weight B; M=0: none)."
        ),
    ] = "hybrid",
    against: Annotated[
        str | None,
        typer.Option(help="A second configuration: report per-query differences and p-values."),
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Cut-off for the metrics.", min=1)] = 10,
    per_query: Annotated[
        Path | None, typer.Option(help="Write one JSON line per query to this file.")
    ] = None,
    long_doc: Annotated[
        bool,
        typer.Option(
            "--long-doc",
            help="Group passages into multi-section Markdown files and score the cited "
            "section: hit@1, hit@5, hit@k, MRR and nDCG on (file, heading).",
        ),
    ] = False,
    header: Annotated[
        str,
        typer.Option(
            help="Index with the structural retrieval header (on), without it (off), or "
            "both, reporting the difference query by query (compare).",
        ),
    ] = "on",
    data_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="beir, docqa (questions over document collections, scored on the cited "
            "file and heading or page; lexical, vector and the --mode hybrid in one run) "
            "or auto (docqa when the folder holds qa.jsonl and corpora/).",
        ),
    ] = "auto",
    answers: Annotated[
        bool,
        typer.Option(
            "--answers",
            help="On a docqa set: ask every question (and its unanswerable ones) and score "
            "the answers: accuracy, cited accuracy, abstention.",
        ),
    ] = False,
) -> Outcome:
    """Measure retrieval quality and latency on BEIR data or a docqa set."""
    from docshelf.evaluate.run import EvalOptions, run_eval
    from docshelf.search.filters import SEARCH_MODES

    options = EvalOptions(
        dataset, mode, against, k, per_query, long_doc, header, data_format, answers
    )
    done = run_eval(options, lambda: run.store_shelf().settings, run.progress)
    here = q(str(dataset))
    if done.kind == "docqa":
        actions = [
            Action(
                run.cmd(f"eval {here} --against hybrid:convex:0.8:0"),
                "Test the hybrid against another fusion, question by question",
            ),
            Action(
                run.cmd(f"eval {here} --per-query runs.jsonl"),
                "Keep each question's cited places, one run file per mode",
            ),
        ]
    elif done.kind == "beir":
        actions = [
            Action(
                run.cmd(f"eval {here} --mode {mode} --against {m}"),
                f"Compare with {m}, query by query",
            )
            for m in SEARCH_MODES
            if m != mode
        ]
    else:
        actions = []
    return Outcome(done.result, actions)
