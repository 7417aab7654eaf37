"""Issue 39, failures not redone: a file that failed for a reason its bytes decide is
neither read nor parsed again by ``sync`` while it stays the same (the stat check, as
for an indexed file); a changed file, a new PDF password (for a locked PDF), a new size
limit (for a file too large) or ``sync --full`` tries it again; a failure of the moment
(a permission, a parser stopped) is tried at every sync. Which is which:
``failures.decided_by``'s one table.

Reads and parses are counted (``prepare.read_file``, ``prepare.parse``), never timed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.testing

from docshelf.cli import app
from docshelf.errors import InvalidInput
from docshelf.failures import Decided, decided_by
from docshelf.model import SyncReport
from docshelf.parse.sandbox import run_limited
from docshelf.shelf import Shelf
from tests import pg
from tests.fakes import HashEmbedder
from tests.fixtures_formats import encrypted_pdf, paged_pdf

GARBAGE = b"%PDF-1.7\n" + bytes(range(256)) * 12 + b"\n%%EOF\n"  # "malformed PDF: …"
LOCKED = "encrypted (password required; set DOCSHELF_PDF_PASSWORD to open it)"


class Calls:
    """How many times sync read and parsed each file, by name."""

    def __init__(self) -> None:
        self.read: Counter[str] = Counter()
        self.parsed: Counter[str] = Counter()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    import docshelf.ingest.prepare as prepare_mod  # sync reads and parses through it
    from docshelf.parse import parse as real_parse

    seen = Calls()
    real_read = prepare_mod.read_file

    def read(path: Path, max_bytes: int, found: Any = None) -> tuple[bytes, os.stat_result]:
        seen.read[Path(path).name] += 1
        return real_read(path, max_bytes, found)

    def parse(data: bytes, file_type: str, limits: Any = None) -> Any:
        seen.parsed[file_type] += 1
        return real_parse(data, file_type, limits)

    monkeypatch.setattr(prepare_mod, "read_file", read)
    monkeypatch.setattr(prepare_mod, "parse", parse)
    return seen


@pytest.fixture
def papers(tmp_path: Path) -> Path:
    """A folder of two PDFs that fail for good (one locked, one garbage) and a note."""
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "locked.pdf").write_bytes(encrypted_pdf("secret"))
    (folder / "garbage.pdf").write_bytes(GARBAGE)
    (folder / "fine.md").write_text("# Fine\n\nThis one reads.\n")
    return folder


@pytest.fixture(params=["sqlite", "postgres"])
def each_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The library on SQLite, then on PostgreSQL (a fresh schema; skipped without one)."""
    if request.param == "sqlite":
        yield request.param
        return
    with pg.fresh_schema() as url:
        monkeypatch.setenv("DOCSHELF_DATABASE_URL", url)
        yield request.param


def opened(home: Path) -> Shelf:
    """The library as a new process opens it (its settings read from the environment)."""
    return Shelf(home, embedder=HashEmbedder())


def reasons(report: SyncReport) -> dict[str, tuple[str, bool]]:
    return {Path(f.path).name: (f.reason, f.skipped) for f in report.failures}


def test_two_pdfs_whose_bytes_failed_are_neither_read_nor_parsed_again(
    isolated_home: Path, papers: Path, calls: Calls, each_store: str
) -> None:
    with opened(isolated_home) as shelf:
        first = shelf.add(papers)
        assert first.added == 1 and calls.parsed == {"pdf": 2, "markdown": 1}
        assert reasons(first) == {
            "locked.pdf": (LOCKED, False),
            "garbage.pdf": ("malformed PDF: data format error", False),
        }
        again = shelf.sync()
        assert calls.read == {"locked.pdf": 1, "garbage.pdf": 1, "fine.md": 1}
        assert calls.parsed == {"pdf": 2, "markdown": 1}
        # still failed, with the same reasons, said to be passed over (unchanged)
        assert reasons(again) == {
            "locked.pdf": (LOCKED, True),
            "garbage.pdf": ("malformed PDF: data format error", True),
        }
        assert again.unchanged == 1 and shelf.status().failure_count == 2
    with opened(isolated_home) as shelf:  # remembered in the store, not in the process
        assert set(reasons(shelf.sync())) == {"locked.pdf", "garbage.pdf"}
    assert calls.parsed == {"pdf": 2, "markdown": 1} and calls.read["garbage.pdf"] == 1


def test_a_new_password_tries_the_locked_pdf_again_and_only_it(
    isolated_home: Path,
    papers: Path,
    calls: Calls,
    monkeypatch: pytest.MonkeyPatch,
    each_store: str,
) -> None:
    with opened(isolated_home) as shelf:
        shelf.add(papers)
    monkeypatch.setenv("DOCSHELF_PDF_PASSWORD", "wrong")
    with opened(isolated_home) as shelf:
        wrong = reasons(shelf.sync())
    assert calls.read == {"locked.pdf": 2, "garbage.pdf": 1, "fine.md": 1}
    assert wrong["locked.pdf"] == ("encrypted (DOCSHELF_PDF_PASSWORD does not open it)", False)
    assert wrong["garbage.pdf"] == ("malformed PDF: data format error", True)
    monkeypatch.setenv("DOCSHELF_PDF_PASSWORD", "secret")
    with opened(isolated_home) as shelf:
        opens = shelf.sync()
        assert opens.added == 1 and list(reasons(opens)) == ["garbage.pdf"]
        assert [f.path for f in shelf.store.list_failures()] == [str(papers / "garbage.pdf")]
    assert calls.read == {"locked.pdf": 3, "garbage.pdf": 1, "fine.md": 1}
    assert calls.parsed["pdf"] == 4  # both at first, then the locked one with each password


def test_a_changed_failing_file_is_tried_again_and_once_fixed_indexed(
    isolated_home: Path, papers: Path, calls: Calls, each_store: str
) -> None:
    garbage = papers / "garbage.pdf"
    with opened(isolated_home) as shelf:
        shelf.add(papers)
        garbage.write_bytes(GARBAGE + b"other garbage")  # changed: read and parsed again
        assert reasons(shelf.sync())["garbage.pdf"][1] is False
        assert calls.read["garbage.pdf"] == 2 and calls.parsed["pdf"] == 3
        stat = garbage.stat()  # touched, the same bytes: read, not parsed
        os.utime(garbage, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        assert reasons(shelf.sync())["garbage.pdf"][1] is True
        assert calls.read["garbage.pdf"] == 3 and calls.parsed["pdf"] == 3
        garbage.write_bytes(paged_pdf([["A paper that reads fine now, at last."]]))
        fixed = shelf.sync()
        assert fixed.added == 1 and list(reasons(fixed)) == ["locked.pdf"]
        assert [f.path for f in shelf.store.list_failures()] == [str(papers / "locked.pdf")]
        assert {d.rel_path for d in shelf.documents()} == {"fine.md", "garbage.pdf"}


@pytest.mark.parametrize("how", ["chmod", "simulated"])
def test_a_file_that_could_not_be_read_is_tried_at_every_sync(
    isolated_home: Path, papers: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Denied by its mode (not for root, who reads anything), or by a ``read_file`` that
    answers as it does for a denial (for root too)."""
    import docshelf.ingest.prepare as prepare_mod

    note = papers / "fine.md"
    denied = [True]
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root reads a file whatever its mode")
        note.chmod(0)
    else:
        counted = prepare_mod.read_file

        def denying(path: Path, max_bytes: int, found: Any = None) -> Any:
            data_and_stat = counted(path, max_bytes, found)
            if Path(path).name == "fine.md" and denied[0]:
                raise InvalidInput("permission denied")
            return data_and_stat

        monkeypatch.setattr(prepare_mod, "read_file", denying)
    try:
        with opened(isolated_home) as shelf:
            first = shelf.add(papers)
            assert reasons(first)["fine.md"] == ("permission denied", False)
            assert reasons(shelf.sync())["fine.md"] == ("permission denied", False)
            assert calls.read["fine.md"] == 2  # the moment's: tried again
            source = shelf.sources()[0].id
            assert set(shelf.store.settled_failures(source)) == {
                str(papers / "locked.pdf"),
                str(papers / "garbage.pdf"),
            }
            note.chmod(0o644)
            denied[0] = False
            readable = shelf.sync()
            assert readable.added == 1 and "fine.md" not in reasons(readable)
            assert calls.read["fine.md"] == 3
    finally:
        note.chmod(0o644)


def test_too_large_is_not_opened_again_until_the_limit_changes(
    isolated_home: Path, tmp_path: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "big.md").write_text("# Big\n\n" + "Words that go on. " * 40_000)  # 0.7 MB
    monkeypatch.setenv("DOCSHELF_MAX_FILE_MB", "0.5")
    with opened(isolated_home) as shelf:
        assert reasons(shelf.add(folder))["big.md"][0].startswith("too large: 0.7 MB")
        assert reasons(shelf.sync())["big.md"][1] is True
    assert calls.read["big.md"] == 1  # the stat says it all: not even opened
    monkeypatch.setenv("DOCSHELF_MAX_FILE_MB", "1")
    with opened(isolated_home) as shelf:
        assert shelf.sync().added == 1
    assert calls.read["big.md"] == 2


def test_sync_full_tries_every_failure_again(terminal: Path, papers: Path, calls: Calls) -> None:
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(papers)
    assert all(f["unchanged_since"] > 0 for f in envelope("sync")["failures"])
    assert calls.parsed == {"pdf": 2, "markdown": 1}
    full = envelope("sync", "--full")
    assert full["counts"]["unchanged"] == 1 and full["counts"]["failed"] == 2
    assert not any("unchanged_since" in f for f in full["failures"])
    assert calls.read == {"locked.pdf": 2, "garbage.pdf": 2, "fine.md": 2}  # every file
    assert calls.parsed == {"pdf": 4, "markdown": 1}  # the same note: read, not parsed
    assert all(f["unchanged_since"] > 0 for f in envelope("sync")["failures"])
    assert calls.parsed["pdf"] == 4


@pytest.fixture
def terminal(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    yield isolated_home


def envelope(*args: str) -> dict[str, Any]:
    """The result of ``docshelf --json ARGS``."""
    result = typer.testing.CliRunner().invoke(app, ["--json", *args])
    env: dict[str, Any] = json.loads(result.stdout)
    assert env["ok"], env
    out: dict[str, Any] = env["result"]
    return out


# -- what decides a failure: failures.decided_by -------------------------------------------


@pytest.mark.parametrize(
    ("reason", "decided"),
    [
        # the bytes
        ("malformed PDF: data format error", Decided.BYTES),
        ("truncated PDF (no %%EOF marker at the end of the file)", Decided.BYTES),
        ("no text to index", Decided.BYTES),
        ("empty file", Decided.BYTES),
        ("binary content, not text", Decided.BYTES),
        ("invalid UTF-8 at byte 31", Decided.BYTES),
        ("DOCX would inflate to 900 MB, over the 256 MB limit (a zip bomb?)", Decided.BYTES),
        ("encrypted with an unsupported security handler", Decided.BYTES),
        ("pdf parser crashed (signal 11)", Decided.BYTES),
        ("rst parser failed: ValueError: unexpected x", Decided.BYTES),
        # the bytes and a setting
        (LOCKED, Decided.PASSWORD),
        ("encrypted (DOCSHELF_PDF_PASSWORD does not open it)", Decided.PASSWORD),
        ("too large: 30.0 MB is over the 25 MB limit (DOCSHELF_MAX_FILE_MB)", Decided.SIZE),
        # the bytes and OCR (on or off, tesseract installed, its languages)
        ("no readable text on any of 2 pages: 2 with an unreadable text layer", Decided.OCR),
        ("no text layer on any of 3 pages (scanned?)", Decided.OCR),
        (
            "no text layer on any of 1 pages (scanned?); OCR unavailable: tesseract is not "
            "installed (apt-get install tesseract-ocr)",
            Decided.OCR,
        ),
        # the moment
        ("too large: the file grew past the size limit while being read", Decided.MOMENT),
        ("permission denied", Decided.MOMENT),
        ("file vanished before it could be read", Decided.MOMENT),
        ("changed while being read: it is now a symlink", Decided.MOMENT),
        ("unreadable: Input/output error", Decided.MOMENT),
        ("unreadable folder: Permission denied", Decided.MOMENT),
        ("source folder is missing or unreadable", Decided.MOMENT),
        ("pdf parser exceeded the 60 s time limit", Decided.MOMENT),
        ("html parser exceeded the 1024 MB memory limit", Decided.MOMENT),
        ("pdf parser was killed (over the 1024 MB memory limit?)", Decided.MOMENT),
        (
            "no text layer on any of 1 pages (scanned?); page 1: OCR failed (over its time "
            "limit (30 s)); not indexed",
            Decided.MOMENT,
        ),
        ("OperationalError: database is locked (after 5 attempts)", Decided.MOMENT),
    ],
)
def test_what_decides_a_failure(reason: str, decided: Decided) -> None:
    assert decided_by(reason) is decided


@pytest.mark.parametrize(
    ("job", "reason", "decided"),
    [
        ("stopped", r"^pdf parser was stopped \(signal 15\)$", Decided.MOMENT),
        ("quits", r"^pdf parser exited without a result \(exit status 3\)$", Decided.MOMENT),
        ("crash", r"^pdf parser crashed \(signal 11\)$", Decided.BYTES),
    ],
)
def test_a_parser_stopped_or_gone_is_the_moments_one_crashed_the_bytes(
    job: str, reason: str, decided: Decided
) -> None:
    """The reasons as the sandbox words them, not as a test spells them."""
    from tests import sandbox_jobs

    with pytest.raises(InvalidInput, match=reason) as failed:
        run_limited(getattr(sandbox_jobs, job), b"x", "pdf")
    assert decided_by(failed.value.message) is decided
