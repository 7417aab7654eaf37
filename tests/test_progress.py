"""Progress that tells the truth: every phase of long work named, the display never
still for more than 2 s while work goes on, enrichment on its own bar, JSON lines for
agents. Time is a fake clock the slow embedder moves; nothing here waits."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.cli.progress import (
    Board,
    JsonLines,
    RichBoard,
    line_column,
    line_room,
    packed,
)
from docshelf.progress import SEPARATOR, ProgressEvent, Rate, describe, middle_ellipsis
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

STILL_AT_MOST = 2.0  # seconds: the contract of issue 20
SECONDS_PER_BATCH = 1.5  # what one model batch costs the slow embedder


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SlowEmbedder(HashEmbedder):
    """A model that takes ``SECONDS_PER_BATCH`` of the fake clock per batch of
    ``batch_size`` texts, as a CPU model does."""

    def __init__(self, clock: FakeClock, batch_size: int = 4) -> None:
        super().__init__("slow-hash", window=64)
        self.clock = clock
        self.batch_size = batch_size
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batches = -(-len(texts) // self.batch_size)
        self.clock.now += SECONDS_PER_BATCH * batches
        self.calls += 1
        return super().embed(texts)


def _notes(root: Path, n: int = 12) -> Path:
    root.mkdir()
    for i in range(n):
        sections = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(f"word{i}x{j}y{k} topic{k % 5}" for k in range(40))
            for j in range(4)
        )
        (root / f"deeply-nested-name-of-note-{i:02d}.md").write_text(f"# Note {i}\n\n{sections}\n")
    return root


def test_add_on_a_slow_embedder_moves_at_least_every_two_seconds_and_names_each_phase(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_ENRICH", "offline")  # enrichment follows indexing
    clock = FakeClock()
    embedder = SlowEmbedder(clock)
    board = Board("Indexing", clock)
    renders: list[tuple[float, list[str], int]] = []  # (time, lines, model calls so far)

    def show(event: ProgressEvent) -> None:
        board.update(event)
        renders.append((clock(), board.lines(), embedder.calls))

    notes = _notes(tmp_path / "notes")
    with Shelf(isolated_home, embedder=embedder, batch_snippets=32) as shelf:
        report = shelf.add(notes, progress=show)
    assert report.added == 12
    # the model ran many batches (one big add), each one a step of the fake clock
    assert embedder.calls >= 10
    start = renders[0][0]
    times = [start] + [t for t, _, _ in renders] + [clock()]
    gaps = [b - a for a, b in pairwise(times)]
    assert max(gaps) <= STILL_AT_MOST
    # every model batch is followed by a render whose text differs from the one before
    for (_, before, calls0), (_, after, calls1) in pairwise(renders):
        if calls1 > calls0:
            assert after != before
    # each phase is named in what was shown, in the order the work does them
    shown = [lines for _, lines, _ in renders]
    phases = [re.match(r"\w+", lines[-1]).group() for lines in shown]  # type: ignore[union-attr]
    firsts = {p: phases.index(p) for p in ("scan", "parse", "embed", "index", "enrich")}
    assert firsts["scan"] < firsts["parse"] < firsts["embed"] < firsts["index"] < firsts["enrich"]
    # enrichment has its own bar, under the files' finished one
    last = shown[-1]
    assert len(last) == 2 and last[0].startswith("index") and last[1].startswith("enrich")
    assert "12/12 documents" in last[1]
    # the embed line counts snippets embedded of those parsed so far, and a rate
    embed_lines = [lines[0] for lines in shown if lines[0].startswith("embed")]
    counts = [int(re.search(r"([\d,]+)/[\d,]+ snippets", ln).group(1)) for ln in embed_lines]  # type: ignore[union-attr]
    assert counts == sorted(counts) and counts[-1] > counts[0]
    assert any("snippets/s" in ln and "ETA" in ln for ln in embed_lines)
    # a finished bar stands still: no rate, no ETA, its elapsed time stopped
    assert "/s" not in last[0] and "ETA" not in last[0]
    assert len({lines[0] for lines in shown if len(lines) == 2 and "2/2" in lines[0]}) == 1


def test_middle_ellipsis_keeps_both_ends_of_a_path() -> None:
    path = "projects/2025/very-long-folder-name/and-a-very-long-file-name-indeed.md"
    short = middle_ellipsis(path, 30)
    assert len(short) == 30 and "…" in short
    assert short.startswith("projects/2025/") and short.endswith("indeed.md")
    assert middle_ellipsis("short.md", 30) == "short.md"
    assert middle_ellipsis(path, 1) == "…"


def test_rate_and_eta_come_from_the_clock() -> None:
    clock = FakeClock()
    rate = Rate(clock)
    rate.observe(ProgressEvent("parse", 0, 100))
    clock.now += 10
    event = ProgressEvent("embed", 20, 100)  # parse and embed share the count of files
    rate.observe(event)
    assert rate.per_second(event) == 2.0
    assert rate.eta(event) == 40.0
    line = describe(event, rate)
    assert "2.0 files/s" in line and "ETA 0:40" in line and "0:10" in line
    # embedding: snippets per second, and the time left for the snippets known
    rate.observe(ProgressEvent("embed", 20, 100, snippets=0, snippets_total=60))
    clock.now += 5
    embedding = ProgressEvent("embed", 20, 100, snippets=20, snippets_total=60)
    rate.observe(embedding)
    assert rate.per_second(embedding) == 4.0 and rate.eta(embedding) == 10.0
    assert "4.0 snippets/s" in describe(embedding, rate)


def test_the_terminal_bars_redraw_from_the_last_event() -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    clock = FakeClock()
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    board = Board("Indexing", clock)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        line_column(board),
        console=console,
        auto_refresh=False,
    ) as bars:
        show = RichBoard(board, bars)
        show(ProgressEvent("parse", 3, 10, "files", "a/" + "x" * 80 + "/end.md", snippets=30))
        clock.now += 1
        bars.refresh()
        first = out.getvalue()
        clock.now += 1  # no event, time goes on: the elapsed time moves
        bars.refresh()
        second = out.getvalue()[len(first) :]
    assert "Indexing" in first and "parse" in first and "3/10 files" in first
    assert "30 snippets" in first and "…" in first and "/end.md" in first
    assert "0:01" in first and "0:02" in second


@given(st.lists(st.text(min_size=1, max_size=30), max_size=8), st.integers(1, 60))
def test_a_packed_line_breaks_only_between_its_fields(parts: list[str], width: int) -> None:
    lines = packed(parts, width)
    assert SEPARATOR.join(lines) == SEPARATOR.join(parts)
    fields = iter(parts)
    for line in lines:  # each line is whole fields, in order
        taken = [next(fields)]
        while SEPARATOR.join(taken) != line:
            assert len(SEPARATOR.join(taken)) < len(line)
            taken.append(next(fields))
        assert len(line) <= width or len(taken) == 1  # over only for one long field
    assert next(fields, None) is None


def test_on_a_narrow_terminal_the_line_wraps_between_fields() -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    clock = FakeClock()
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    board = Board("Indexing", clock)
    bars = Progress(  # not started: the frame is printed once, below
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        line_column(board, lambda: line_room(console.width, board.label)),
        console=console,
    )
    show = RichBoard(board, bars)
    item = "languages/haskell/tail-calls-in-haskell.pdf"
    show(ProgressEvent("embed", 1, 20, "files", item, snippets=0, snippets_total=1108))
    clock.now += 10
    show(ProgressEvent("embed", 1, 20, "files", item, snippets=96, snippets_total=1108))
    console.print(bars.get_renderable())
    drawn = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    assert len(drawn) == 2 and all(len(line) <= 100 for line in drawn), drawn
    assert "embed" in drawn[0] and "96/1,108 snippets" in drawn[0]
    assert re.search(r"ETA \d+:\d\d", drawn[1])  # "ETA" beside its time
    assert drawn[1].split()[0] in ("ETA", "9.6")  # a field starts the next line
    assert drawn[1].endswith("calls-in-haskell.pdf")


def test_json_progress_lines_go_to_stderr_and_stdout_keeps_one_envelope(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_ENRICH", "offline")
    notes = _notes(tmp_path / "notes", 5)
    result = CliRunner().invoke(
        app, ["add", str(notes), "--json", "--progress"], env={"DOCSHELF_EMBEDDER": "none"}
    )
    assert result.exit_code == 0, result.output
    envelope = json.loads(result.stdout)
    assert envelope["ok"] and envelope["result"]["counts"]["added"] == 5
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert events and all(e["event"] == "progress" for e in events)
    assert {"scan", "parse", "index", "enrich"} <= {e["phase"] for e in events}
    keys = {"phase", "done", "total", "unit", "item", "rate", "eta_seconds", "elapsed_seconds"}
    assert all(keys <= set(e) for e in events)
    parse = [e for e in events if e["phase"] == "parse"]
    assert parse[-1]["done"] == parse[-1]["total"] == 5
    # without --progress, JSON mode writes nothing on stderr
    quiet = CliRunner().invoke(app, ["sync", "--json"], env={"DOCSHELF_EMBEDDER": "none"})
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_json_lines_merge_close_events_but_keep_phase_changes_and_ends() -> None:
    clock = FakeClock()
    out = io.StringIO()
    lines = JsonLines(out, clock, every=0.5)
    for n in range(10):  # ten events in 0.1 s: the first and the last are written
        lines(ProgressEvent("parse", n, 9))
        clock.now += 0.01
    lines(ProgressEvent("embed", 9, 9))
    written = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["phase"], e["done"]) for e in written] == [("parse", 0), ("parse", 9), ("embed", 9)]


def test_the_reindex_status_carries_the_phase_its_rate_and_eta(
    isolated_home: Path, tmp_path: Path
) -> None:
    """What ``GET /v1/reindex`` shows while a reindex runs."""
    from docshelf.ingest.reindex import ReindexRunner

    runner = ReindexRunner()
    seen: list[dict[str, object]] = []

    class Watched(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            seen.append(dict(runner.state))
            return super().embed(texts)

    notes = _notes(tmp_path / "notes", 4)
    with Shelf(isolated_home, embedder=HashEmbedder("model-a")) as shelf:
        shelf.add(notes)
    with Shelf(isolated_home, embedder=Watched("model-b"), check_model=False) as shelf:
        runner._run(shelf.runtime)  # what start() runs in its thread
    embedding = [s for s in seen if s.get("phase") == "embed"]
    assert [s["done"] for s in embedding] == list(range(4))
    last = embedding[-1]
    assert last["state"] == "running" and last["total"] == 4 and last["unit"] == "documents"
    assert str(last["item"]).endswith(".md") and "rate" in last and "eta_seconds" in last
    assert runner.state["state"] == "done"
