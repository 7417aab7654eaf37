"""Searchable in seconds: `docshelf add` of a folder into a fresh home, a new process, and
from its start:

- **first lexical hit**: the time until a `docshelf search --mode lexical` (a new process
  each time, as a person in a second terminal) finds the folder's *last* file (walk
  order) by a word only it holds — the whole folder searchable by its words;
- **full hybrid**: the time until every snippet has its vector (`add` returned; with
  `--background`, its embedding process finished);
- peak RSS of the `add` process (and of the background one), from ``/proc``.

The first hit comes from one run, the times of the add and its memory from another
with no search beside it (each search is a process of its own, and takes CPU from the
add on a small machine).

With ``--baseline TREE`` (a checkout's ``src``, e.g. ``git worktree add ../base
<commit>``) the same run is made with that code first, so both rows come from one run
on one machine. ``--backend`` sets ``DOCSHELF_EMBED_BACKEND`` for both.

    .venv/bin/python bench/first_hit.py [--corpus ../shared/data/docqa-dev/corpora/vault]
        [--baseline BASE/src] [--background] [--backend onnx-int8]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "docqa-dev" / "corpora" / "vault"


def target(corpus: Path) -> tuple[str, str]:
    """The last text file in walk order and a word of 7+ letters no other file holds."""
    files = sorted(
        p
        for p in corpus.rglob("*")
        if p.suffix in (".md", ".rst", ".txt")
        and not any(s.startswith(".") for s in p.relative_to(corpus).parts)
    )
    words = {p: set(re.findall(r"[a-z]{7,}", p.read_text(errors="ignore").lower())) for p in files}
    seen = collections.Counter(w for ws in words.values() for w in ws)
    for path in reversed(files):
        unique = sorted(w for w in words[path] if seen[w] == 1)
        if unique:
            return str(path.relative_to(corpus)), unique[0]
    raise SystemExit("no file with a word of its own")


def peak_rss(pid: int, peaks: dict[int, int], stop: threading.Event) -> None:
    """The highest VmHWM of ``pid`` while it lives (kB)."""
    status = Path(f"/proc/{pid}/status")
    while not stop.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.05)


def vectors_done(db: Path) -> bool:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            snippets, missing = con.execute(
                "SELECT COUNT(*), COUNT(*) - (SELECT COUNT(*) FROM vectors) FROM chunks "
                "WHERE tier = 'snippet'"
            ).fetchone()
            return bool(snippets) and missing == 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


def one_run(
    corpus: Path, src: Path, backend: str | None, background: bool, *, poll: bool
) -> dict[str, float]:
    """One `add` into a fresh home; with ``poll``, searches for the first hit beside it
    (each search takes CPU from the add: the times of the add come from a run without)."""
    rel, word = target(corpus)
    home = Path(tempfile.mkdtemp(prefix="first-hit-"))
    env = {**os.environ, "DOCSHELF_HOME": str(home), "PYTHONPATH": str(src)}
    env.update(DOCSHELF_EMBEDDER="local", DOCSHELF_ENRICH="off", DOCSHELF_SEARCH_HELPER="off")
    if backend:
        env["DOCSHELF_EMBED_BACKEND"] = backend
    cli = [sys.executable, "-m", "docshelf.cli", "--json"]
    add = [*cli, "add", str(corpus), *(["--background"] if background else [])]
    peaks: dict[int, int] = {}
    stop = threading.Event()
    started = time.monotonic()
    proc = subprocess.Popen(add, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    threading.Thread(target=peak_rss, args=(proc.pid, peaks, stop), daemon=True).start()
    first_hit = None if poll else 0.0
    search = [*cli, "search", word, "--mode", "lexical", "--limit", "5"]
    while first_hit is None:
        out = subprocess.run(search, env=env, capture_output=True, text=True)
        if out.returncode == 0:
            hits = json.loads(out.stdout)["result"]["hits"]
            if any(h["citation"]["path"].endswith(rel) for h in hits):
                first_hit = time.monotonic() - started
        if first_hit is None and proc.poll() is not None and out.returncode == 0:
            raise SystemExit(f"add ended and {word!r} does not find {rel}")
        time.sleep(0.1)  # (each search is a process of its own: leave the add a core)
    stdout, _ = proc.communicate()
    returned = time.monotonic() - started
    child = json.loads(stdout)["result"].get("embedding", {}).get("pid")
    if child:
        threading.Thread(target=peak_rss, args=(child, peaks, stop), daemon=True).start()
    while not vectors_done(home / "docshelf.db"):
        time.sleep(0.2)
    hybrid = time.monotonic() - started
    stop.set()
    return {
        "first_lexical_hit_s": round(first_hit, 1),
        "add_returned_s": round(returned, 1),
        "full_hybrid_s": round(hybrid, 1),
        "peak_rss_mb": round(max(peaks.values(), default=0) / 1024),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--baseline", type=Path, help="the src folder of the code to compare with")
    ap.add_argument("--backend", help="DOCSHELF_EMBED_BACKEND for this code's run")
    ap.add_argument("--baseline-backend", help="DOCSHELF_EMBED_BACKEND for the baseline's run")
    ap.add_argument("--background", action="store_true", help="this code's add --background")
    ap.add_argument("--no-poll", action="store_true", help="only the quiet runs (no first hit)")
    a = ap.parse_args()
    rel, word = target(a.corpus)
    print(f"corpus {a.corpus} (last file {rel}, searched for {word!r})")
    rows = []
    runs = [("this code", ROOT / "src", a.backend, a.background)]
    if a.baseline:
        runs.insert(0, ("baseline", a.baseline, a.baseline_backend, False))
    for name, src, backend, background in runs:
        quiet = one_run(a.corpus, src, backend, background, poll=False)
        if not a.no_poll:
            quiet["first_lexical_hit_s"] = one_run(a.corpus, src, backend, background, poll=True)[
                "first_lexical_hit_s"
            ]
        rows.append((name, quiet))
    print("| code | first lexical hit | add returned | full hybrid | peak RSS |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['first_lexical_hit_s']} s | {r['add_returned_s']} s | "
            f"{r['full_hybrid_s']} s | {r['peak_rss_mb']} MB |"
        )


if __name__ == "__main__":
    main()
