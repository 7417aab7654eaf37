"""A process really killed in the middle of `add` loses nothing committed and
leaves a store that opens, passes its integrity check and resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from docshelf.shelf import Shelf


def _count(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_kill_during_add_then_resume(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    n_files = 1500
    for i in range(n_files):
        body = "\n\n".join(
            f"## Part {j}\n\nNote {i} paragraph {j} about topic{i % 17}." for j in range(6)
        )
        (root / f"note{i:04}.md").write_text(f"# Note {i}\n\n{body}\n")
    home = tmp_path / "home"
    env = {**os.environ, "DOCSHELF_HOME": str(home), "DOCSHELF_EMBEDDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "--json", "add", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = home / "docshelf.db"
    deadline = time.monotonic() + 60
    while _count(db) < 50 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "add finished before it could be killed; make the folder bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _count(db)
    assert 0 < partial < n_files

    with Shelf(home, embedder=None) as shelf:
        assert shelf.check() == []
        report = shelf.add(root)
        assert report.failed == 0
        assert report.added + report.unchanged == n_files
        assert report.unchanged >= partial
        assert len(shelf.documents()) == n_files
        assert shelf.check() == []
        assert shelf.search("topic3 paragraph", mode="lexical").hits
