"""kill -9 at every stage of ``docshelf add``, N times each: nothing lost, nothing twice,
nothing stale, enrichment finished by the next run.

A reference library is built once, cleanly, from the corpus (a copy of a folder, or
generated notes). Then, for each stage that a clean ``add --progress`` reports (``scan``,
``parse``, ``embed``, ``index``, ``enrich``…) and each trial, a fresh home: ``add`` runs
with its progress as JSON lines on stderr, and is killed (SIGKILL) at the stage's first
event plus a delay, spread over the trials from 0 to the stage's length in the clean run
(so the kills land early and late in the stage). A second ``add`` of the same folder
then runs to its end, and the library is compared with the reference:

- lost: documents of the reference missing, or with fewer chunks;
- twice: more documents or chunks than the reference (a document written twice, a
  chunk left over from a half-written one);
- stale: ``status --check`` problems (a citation at a path no file is at, chunks of no
  document, snippets without vectors, index entries out of step);
- not enriched: documents whose enrichment is still pending after the second run.

A trial whose ``add`` ended before its kill is counted apart ("ended first"), not as a
kill. Prints one table: stage, kills, lost, twice, stale, not
enriched, ended first.

    .venv/bin/python bench/crash_table.py [--corpus DIR | --notes 80] [--trials 20] [--lexical]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DOCSHELF = [sys.executable, "-m", "docshelf.cli"]


@dataclass
class Row:
    kills: int = 0
    lost: int = 0
    twice: int = 0
    stale: int = 0
    not_enriched: int = 0
    ended_first: int = 0


def generate(root: Path, n: int = 80) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(2000)]
    for i in range(n):
        parts = [f"# Note {i}\n"]
        for j in range(rng.randint(2, 6)):
            para = " ".join(rng.choice(words) for _ in range(rng.randint(40, 160)))
            parts.append(f"## Part {j}\n\n{para}.\n")
        folder = root / f"f{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text("\n".join(parts))


def env_for(home: Path, model: bool) -> dict[str, str]:
    env = {**os.environ, "DOCSHELF_HOME": str(home), "DOCSHELF_ENRICH": "offline"}
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent / "src"))
    env["DOCSHELF_SEARCH_HELPER"] = "off"
    if not model:
        env["DOCSHELF_EMBEDDER"] = "none"
    return env


def add(folder: Path, env: dict[str, str], kill_at: tuple[str, float] | None) -> bool:
    """Run ``add``; with ``kill_at`` (stage, seconds), SIGKILL it that long after the
    stage's first event. True when it was killed before it ended."""
    proc = subprocess.Popen(
        [*DOCSHELF, "--json", "add", str(folder), "--progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    killed = threading.Event()
    timer: threading.Timer | None = None

    def kill() -> None:
        if proc.poll() is None:
            killed.set()
            proc.send_signal(signal.SIGKILL)

    for line in proc.stderr:
        if kill_at is None or timer is not None:
            continue
        try:
            phase = json.loads(line).get("phase")
        except ValueError:
            continue
        if phase == kill_at[0]:
            timer = threading.Timer(kill_at[1], kill)
            timer.start()
    proc.wait()
    if timer is not None:
        timer.cancel()
    if kill_at is None and proc.returncode != 0:
        raise SystemExit(f"add failed ({proc.returncode})")
    return killed.is_set()


def counts(home: Path) -> tuple[dict[str, int], int]:
    """({document sha256: chunks}, documents pending enrichment)."""
    con = sqlite3.connect(home / "docshelf.db")
    try:
        rows = con.execute(
            "SELECT d.sha256, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) "
            "FROM documents d"
        ).fetchall()
        pending = con.execute(
            "SELECT COUNT(*) FROM documents WHERE enriched_at IS NULL"
        ).fetchone()[0]
    finally:
        con.close()
    return dict(rows), int(pending)


def problems(env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [*DOCSHELF, "--json", "status", "--check"], env=env, capture_output=True, text=True
    )
    return list(json.loads(out.stdout)["result"]["problems"])


def stages(folder: Path, env: dict[str, str]) -> dict[str, float]:
    """The stages a clean ``add`` reports, in order, with how long each lasted (from its
    first event to the next stage's first event, or the end)."""
    proc = subprocess.run(
        [*DOCSHELF, "--json", "add", str(folder), "--progress"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    first: dict[str, float] = {}
    last = 0.0
    for line in proc.stderr.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("phase"):
            last = float(event.get("elapsed_seconds") or 0.0)
            first.setdefault(event["phase"], last)
    starts = [*first.values(), last]
    return {stage: max(starts[i + 1] - t, 0.05) for i, (stage, t) in enumerate(first.items())}


def delays(n: int, lasting: float) -> Iterator[float]:
    """A kill time for each of ``n`` trials, spread over a stage ``lasting`` seconds."""
    for t in range(n):
        yield lasting * t / max(n - 1, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, help="a folder to copy (default: generated notes)")
    ap.add_argument("--notes", type=int, default=80, help="how many notes to generate")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--lexical", action="store_true", help="no embedding model (no embed stage)")
    args = ap.parse_args()
    model = not args.lexical
    work = Path(tempfile.mkdtemp(prefix="docshelf-crash-"))
    try:
        folder = work / "corpus"
        if args.corpus:
            shutil.copytree(args.corpus, folder)
        else:
            generate(folder, args.notes)
        ref_env = env_for(work / "reference", model)
        per_stage = stages(folder, ref_env)
        reference, pending = counts(work / "reference")
        assert pending == 0 and not problems(ref_env), "the reference library is not clean"
        print(
            f"corpus: {len(reference)} documents, {sum(reference.values())} chunks; "
            f"seconds per stage in a clean add: { {k: round(v, 2) for k, v in per_stage.items()} }"
        )
        table: dict[str, Row] = {}
        for stage in per_stage:
            row = table.setdefault(stage, Row())
            for t, delay in enumerate(delays(args.trials, per_stage[stage])):
                home = work / f"home-{stage}-{t}"
                env = env_for(home, model)
                if add(folder, env, (stage, delay)):
                    row.kills += 1
                else:
                    row.ended_first += 1
                add(folder, env, None)
                got, pending = counts(home)
                row.lost += sum(1 for fp, n in reference.items() if got.get(fp, 0) < n)
                row.twice += sum(1 for fp, n in got.items() if n > reference.get(fp, 0))
                row.stale += len(problems(env))
                row.not_enriched += pending
                shutil.rmtree(home)
            print(f"{stage}: {row}", flush=True)
        print("\n| stage | kills | lost | twice | stale | not enriched | ended first |")
        print("|---|---|---|---|---|---|---|")
        for stage, r in table.items():
            print(
                f"| {stage} | {r.kills} | {r.lost} | {r.twice} | {r.stale} | "
                f"{r.not_enriched} | {r.ended_first} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
