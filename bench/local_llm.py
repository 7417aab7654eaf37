"""The packaged local model's answers against the offline ones, on docqa-dev, one run.

Starts ``docshelf llm-serve`` (the ``local-llm`` extra: Gemma 3 270M through llama.cpp),
then asks every ``--every``-th question of each collection (answerable and unanswerable)
twice on the same library: offline (the default) and through the model. Both are scored
by docqa-dev's rules (evaluate/answer_score.py): accuracy, cited accuracy, abstention
recall, false answers; with the seconds each answer took (p50, p95) and how many of the
model's answers were its own (the others fell back to the offline answer: nothing of the
model's reply could be grounded). The libraries are ``docshelf eval --answers``'s, built
on first use.

    .venv/bin/python bench/local_llm.py --home DIR [--docqa ../shared/data/docqa-dev] \\
        [--every 4] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any


def serve(port: int, threads: int, home: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "docshelf.cli", "--home", str(home), "llm-serve"]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--threads", str(threads)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(
                    "docshelf llm-serve exited: is the local-llm extra there?"
                ) from None
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("docshelf llm-serve was not ready in 5 minutes")


def main() -> None:
    from docshelf.config import Settings
    from docshelf.embed import make_embedder
    from docshelf.evaluate.answer_score import Asked, correct, is_cited, table
    from docshelf.evaluate.answers import ANSWERS_FILE, _places
    from docshelf.evaluate.beir import eval_settings
    from docshelf.evaluate.docqa import collection_home
    from docshelf.evaluate.docqa_set import load_docqa
    from docshelf.llm.local import MODEL
    from docshelf.llm.openai import OpenAILLM
    from docshelf.shelf import Shelf

    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="eval home (libraries cached)")
    ap.add_argument("--docqa", type=Path, default=root.parent / "shared/data/docqa-dev")
    ap.add_argument("--every", type=int, default=4, help="ask every Nth question")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=8799)
    args = ap.parse_args()

    ds = load_docqa(args.docqa)
    gold = {g["id"]: g for g in map(json.loads, (ds.path / ANSWERS_FILE).open())}
    embedder = make_embedder(Settings.from_env().embedder)
    model = embedder.model_id if embedder else "none"
    server = serve(args.port, args.threads, Path(tempfile.mkdtemp(prefix="docshelf-llm-")))
    llm = OpenAILLM(f"http://127.0.0.1:{args.port}/v1", MODEL, timeout=600.0)
    asked: dict[str, list[Asked]] = {"offline": [], "local model": []}
    seconds: dict[str, list[float]] = {"offline": [], "local model": []}
    own = 0
    try:
        for collection, folder in ds.collections.items():
            home = collection_home(args.home, ds, collection, model)
            with Shelf(settings=eval_settings(home, model), embedder=embedder) as shelf:
                shelf.add(folder)
                shelf.prepare_query_model()
                questions = [
                    (q.id, q.question, q.kind, True, q.answers)
                    for q in ds.questions
                    if q.collection == collection
                ]
                questions += [
                    (
                        str(u["id"]),
                        str(u["question"]),
                        f"unanswerable {u.get('kind', '')}",
                        False,
                        (),
                    )
                    for u in gold.values()
                    if u.get("answerable") is False and u.get("collection") == collection
                ]
                for qid, question, kind, answerable, places in questions[:: args.every]:
                    for name, with_llm in (("offline", None), ("local model", llm)):
                        shelf.llm = with_llm
                        start = time.perf_counter()
                        answer = shelf.ask(question)
                        seconds[name].append(time.perf_counter() - start)
                        own += with_llm is not None and answer.mode == "llm"
                        right = answerable and answer.answered and correct(answer.answer, gold[qid])
                        shown = tuple(_places(answer, folder))
                        wanted = [
                            {"path": a.path, "heading": a.heading, "page": a.page} for a in places
                        ]
                        cited = right and is_cited(shown, wanted)
                        asked[name].append(
                            Asked(qid, collection, kind, answerable, answer.answered, right, cited)
                        )
    finally:
        server.kill()
    print(f"docqa-dev, every {args.every}th question, {len(asked['offline'])} asked each way")
    print("| answers | accuracy | cited | abstention recall | false answers | s/answer p50 / p95 |")
    print("|---|---|---|---|---|---|")
    for name, rows in asked.items():
        a: dict[str, Any] = table(rows)["all"]
        times = sorted(seconds[name])
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(
            f"| {name} | {a['accuracy']:.3f} | {a['cited_accuracy']:.3f} | "
            f"{a.get('abstention_recall', 0):.3f} | {a.get('false_answer', 0):.3f} | "
            f"{statistics.median(times):.2f} / {p95:.2f} |"
        )
    print(f"the model's own answers: {own} of {len(asked['local model'])} (the rest fell back)")


if __name__ == "__main__":
    main()
