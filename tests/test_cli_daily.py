"""Issue 42, the CLI as a person uses it at a terminal (and through a pipe): each test
names the point of the issue it holds, in the issue's words.

A terminal is faked two ways: typer's test runner with stdout counting as a terminal
(what rich draws), or, where the command must read a person's answer, a real
pseudo-terminal (``pty``) the command runs on as a child process.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer.testing

from docshelf.cli import app
from docshelf.shelf import Shelf
from tests.fixtures_formats import paged_pdf
from tests.screen import plain

WIDE = "200"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Path:
    """stdout counts as a terminal (human output); the library is ``isolated_home``,
    lexical (no model)."""
    monkeypatch.setattr(
        typer.testing._NamedTextIOWrapper,
        "isatty",
        lambda self: self.name == "<stdout>",
        raising=False,
    )
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    return isolated_home


def human(*args: str, columns: str = WIDE, code: int = 0) -> str:
    """What a person sees of ``docshelf ARGS`` at a terminal ``columns`` wide."""
    result = typer.testing.CliRunner().invoke(
        app, list(args), env={"COLUMNS": columns, "NO_COLOR": "1"}
    )
    assert result.exit_code == code, result.output
    return plain(result.output)


def envelope(*args: str) -> dict[str, Any]:
    """The JSON envelope of ``docshelf --json ARGS``."""
    result = typer.testing.CliRunner().invoke(app, ["--json", *args])
    env: dict[str, Any] = json.loads(result.stdout)
    assert env["ok"], env
    return env


def at_a_terminal(argv: list[str], typed: str, home: Path) -> tuple[int, str]:
    """``docshelf ARGV`` run on a pseudo-terminal (stdin, stdout and stderr), ``typed``
    typed at it: its exit status and all it showed (the typed text echoed too)."""
    import pty

    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(DOCSHELF_HOME=str(home), DOCSHELF_EMBEDDER="none", COLUMNS="200")
    env.update(DOCSHELF_SEARCH_HELPER="off", DOCSHELF_ENRICH="off", NO_COLOR="1")
    master, child_end = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", *argv],
        stdin=child_end,
        stdout=child_end,
        stderr=child_end,
        env=env,
        close_fds=True,
    )
    os.close(child_end)
    os.write(master, typed.encode())
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                proc.kill()
                break
            try:
                piece = os.read(master, 4096)
            except OSError:  # EIO: the command has ended and closed the terminal
                break
            if not piece:
                break
            shown += piece
    finally:
        os.close(master)
    return proc.wait(60), shown.decode(errors="replace").replace("\r\n", "\n")


# -- `list` stops at 100 of 586 without saying so -----------------------------------------


def _notes(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(n):
        text = f"# Note {i}\n\nSome words of note {i} in {folder.name}.\n"
        (folder / f"note{i:03}.md").write_text(text)
    return folder


def test_list_says_it_shows_100_of_586_and_the_json_has_the_total(
    terminal: Path, tmp_path: Path
) -> None:
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(_notes(tmp_path / "notes", 586))
    shown = " ".join(human("list").split())
    assert "100 of 586 shown; --offset 100 for the next, --limit N or --all for more" in shown

    first = envelope("list")["result"]
    counts = [len(first["documents"]), first["total"], first["limit"], first["offset"]]
    assert counts == [100, 586, 100, 0] and first["next_offset"] == 100
    last = envelope("list", "--offset", "500")
    assert (len(last["result"]["documents"]), last["result"]["next_offset"]) == (86, None)
    assert not any("--offset" in a["command"] for a in last["next_actions"])
    page = envelope("list", "--limit", "50", "--offset", "100")
    assert page["result"]["next_offset"] == 150
    assert any(a["command"].endswith("list --limit 50 --offset 150") for a in page["next_actions"])
    everything = envelope("list", "--all")["result"]
    assert len(everything["documents"]) == 586 and everything["next_offset"] is None
    assert everything["limit"] is None
    assert "shown" not in human("list", "--all")  # all of them: nothing to say


# -- `list | head` prints one 100 KB JSON line --------------------------------------------


def test_list_piped_to_head_shows_whole_documents_a_line_each(
    isolated_home: Path, tmp_path: Path
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        shelf.add(_notes(tmp_path / "notes", 120))
    env = {**os.environ, "DOCSHELF_HOME": str(isolated_home), "DOCSHELF_EMBEDDER": "none"}
    piped = subprocess.run(
        f"{sys.executable} -m docshelf.cli list | head",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    lines = piped.stdout.splitlines()
    assert len(lines) == 10 and max(map(len, lines)) < 1000, piped.stdout[:2000]
    records = [json.loads(line.rstrip(",")) for line in lines if line.startswith('{"id"')]
    assert len(records) >= 7 and all(r["id"].startswith(("src_", "doc_")) for r in records)
    # and the whole output is still the one envelope a script reads
    whole = subprocess.run(
        [sys.executable, "-m", "docshelf.cli", "list"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    envelope = json.loads(whole.stdout)
    assert envelope["ok"] and len(envelope["result"]["documents"]) == 100
    documents = [line for line in whole.stdout.splitlines() if line.startswith('{"id": "doc_')]
    assert len(documents) == 100
    # with --json, the machine's form: the envelope on one line, as every command's
    asked = subprocess.run(
        [sys.executable, "-m", "docshelf.cli", "--json", "list"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert asked.stdout.count("\n") == 1 and json.loads(asked.stdout) == envelope


# -- `remove` does not confirm on a terminal ------------------------------------------------


def test_remove_asks_first_on_a_terminal(isolated_home: Path, tmp_path: Path) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        source = shelf.add(_notes(tmp_path / "notes", 3)).source_id
    assert source is not None

    code, shown = at_a_terminal(["remove", source], "n\n", isolated_home)
    asked = f"Remove {source} ({tmp_path / 'notes'}) and its 3 documents from the library?"
    assert asked in " ".join(shown.split()) and "[y/N]" in shown, shown
    assert code == 1 and "Nothing removed." in shown
    with Shelf(isolated_home, embedder=None) as shelf:
        assert shelf.count_documents() == 3

    code, shown = at_a_terminal(["remove", str(tmp_path / "notes")], "\x04", isolated_home)
    assert code == 1 and "Nothing removed." in shown  # no answer (Ctrl-D, the end): no

    code, shown = at_a_terminal(["remove", source], "y\n", isolated_home)
    assert code == 0 and "Removed: 3 removed" in shown, shown
    with Shelf(isolated_home, embedder=None) as shelf:
        assert shelf.count_documents() == 0


def test_remove_with_yes_or_json_does_not_ask(isolated_home: Path, tmp_path: Path) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        one = shelf.add(_notes(tmp_path / "one", 2)).source_id
        two = shelf.add(_notes(tmp_path / "two", 2)).source_id
    assert one and two
    code, shown = at_a_terminal(["remove", one, "--yes"], "", isolated_home)
    assert code == 0 and "[y/N]" not in shown and "Removed: 2 removed" in shown
    code, shown = at_a_terminal(["--json", "remove", two], "", isolated_home)
    assert code == 0 and json.loads(shown)["result"]["counts"]["removed"] == 2


# -- `--group document` is not in score order -----------------------------------------------


def _bread(folder: Path) -> Path:
    """A note whose heading is the query (ranked first by that rule) with a lower score
    than another document that holds the query's words more often."""
    folder.mkdir(parents=True)
    filler = " ".join(f"word{i} plain filler text" for i in range(60))
    (folder / "kitchen.md").write_text(f"# Kitchen\n\n## Sourdough starter care\n\n{filler}\n")
    (folder / "diary.md").write_text(
        "# Sourdough starter care diary\n\nSourdough starter care matters: sourdough "
        "starter care is the whole craft, and starter care for sourdough never stops.\n"
    )
    (folder / "bread.md").write_text(
        "# Bread\n\nA sourdough starter needs care and flour; sourdough starter care is daily.\n"
    )
    for i in range(8):
        (folder / f"other{i}.md").write_text(f"# Other {i}\n\nGardens and rivers, {i}.\n")
    return folder


def test_group_document_says_why_a_hit_stands_above_higher_scores(
    terminal: Path, tmp_path: Path
) -> None:
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(_bread(tmp_path / "notes"))
    query = ["search", "sourdough starter care", "--group", "document"]
    hits = envelope(*query)["result"]["hits"]
    assert [h["citation"]["title"] for h in hits[:2]] == ["Kitchen", "Sourdough starter care diary"]
    assert hits[0]["score"] < hits[1]["score"]  # the heading named comes first (SPEC §4)
    # every hit above one of higher score says which rule put it there
    for n, h in enumerate(hits):
        if any(later["score"] > h["score"] for later in hits[n + 1 :]):
            assert h.get("placed_by"), h
    assert hits[0]["placed_by"] == ["named"]
    lines = [line for line in human(*query).splitlines() if re.match(r"\d+\. ", line)]
    assert lines[0].startswith("1. Kitchen (kitchen.md#0)") and lines[0].endswith(
        "↑ its heading is your query"
    )
    assert "↑" not in " ".join(lines[1:])  # the rest are in score order


# -- `show` refuses a unique id prefix ------------------------------------------------------


def test_show_takes_a_unique_start_of_an_id(terminal: Path, tmp_path: Path) -> None:
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(_notes(tmp_path / "notes", 40))
        ids = sorted(d.id for d in shelf.documents())
    target = ids[0]
    unique = next(
        target[:n]
        for n in range(5, len(target))
        if not any(other.startswith(target[:n]) for other in ids[1:])
    )
    assert envelope("show", unique)["result"]["id"] == target
    assert envelope("show", unique.removeprefix("doc_"))["result"]["id"] == target
    assert re.search(rf"^ *id +{target} *$", human("show", unique), re.M)
    result = typer.testing.CliRunner().invoke(app, ["--json", "show", "doc_"])
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_input" and "several documents" in error["message"]
    result = typer.testing.CliRunner().invoke(app, ["--json", "show", "doc_zzzz"])
    assert json.loads(result.stdout)["error"]["code"] == "not_found"


# -- `context` shows a different heading than the hit that suggested it --------------------


def test_context_cites_the_heading_the_hit_was_cited_under(terminal: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "garden.md").write_text(
        "# Garden\n\nThe garden has beds of many kinds.\n\n## Apples\n\nApple trees want "
        "pruning in winter and sun in summer.\n\n## Bananas\n\nBanana plants need warmth, "
        "shelter from wind and rich soil.\n"
    )
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
    found = envelope("search", "banana plants warmth shelter")
    hit = found["result"]["hits"][0]
    assert hit["citation"]["heading_path"] == ["Garden", "Bananas"]  # an inner heading
    suggested = found["next_actions"][0]["command"]
    assert suggested.startswith("docshelf context ") and "--anchor" in suggested
    args = suggested.split()[1:]
    assert envelope(*args)["result"]["citation"]["heading_path"] == ["Garden", "Bananas"]
    # at the terminal, the place reads as the hit's did
    searched = human("search", "banana plants warmth shelter")
    read = human(*args)
    assert "§ Bananas  chunk_" in searched and "\n§ Bananas\n" in read, read


# -- `ask --stream` is not word-wrapped ----------------------------------------------------


def test_ask_stream_wraps_between_words_at_the_terminals_width(
    terminal: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "raft.md").write_text(
        "# Raft\n\nA follower that hears no heartbeat within its election timeout becomes a "
        "candidate and asks the other servers for their votes. A candidate that wins a "
        "majority of the votes becomes the leader for the rest of that term. The leader "
        "sends heartbeats to every follower so that no new election starts.\n"
    )
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
    question = "How does a follower become the leader?"
    whole = envelope("ask", question)["result"]["answer"]
    assert len(whole) > 120  # several lines at 40 columns
    shown = human("ask", question, "--stream", columns="40")
    answer = shown.split("\n\n(")[0]
    lines = answer.splitlines()
    assert len(lines) >= 3 and max(len(line) for line in lines) <= 40, lines
    assert " ".join(line.strip() for line in lines) == whole  # no word cut, none lost


# -- `status` does not name the documents whose pages have no text -------------------------


def test_status_names_the_documents_with_pages_without_text(terminal: Path, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    prose = [f"Line {i} of ordinary prose that fills the page with plain words." for i in range(12)]
    (folder / "scanned.pdf").write_bytes(paged_pdf([prose, [], [], prose], title="Scanned"))
    (folder / "clean.pdf").write_bytes(paged_pdf([prose, prose], title="Clean"))
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
        scanned = next(d for d in shelf.documents() if d.path.endswith("scanned.pdf"))
    result = envelope("status")["result"]
    assert result["pages_without_text"] == 2
    assert result["documents_with_pages_without_text"] == [
        {
            "document_id": scanned.id,
            "title": scanned.title,
            "path": str(folder / "scanned.pdf"),
            "pages_without_text": 2,
            "page_count": 4,
        }
    ]
    shown = human("status")
    assert "2 pages without text (scanned? not read by OCR), in 1 document:" in shown
    assert f"{scanned.id}  {folder / 'scanned.pdf'}: 2 of 4 pages" in shown
    assert "clean.pdf" not in shown


# -- image embeds show as "(no such note)" --------------------------------------------------


def test_an_image_embed_is_not_a_missing_note(terminal: Path, tmp_path: Path) -> None:
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "trip.md").write_text(
        "# Trip\n\n![[beach.png]]\n\nSee [[Packing list]] and [[Map.PDF|the map]], and the "
        "notes of [[Release 1.2]].\n"
    )
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
        trip = shelf.documents()[0].id
    shown = {line.strip() for line in human("show", trip).splitlines()}
    assert "![[beach.png]] -> (an attachment, not a note)" in shown
    assert "[[map.pdf]] -> (an attachment, not a note)" in shown
    assert "[[packing list]] -> (no such note)" in shown  # a note, missing
    assert "[[release 1.2]] -> (no such note)" in shown
    links = {link["target"]: link for link in envelope("show", trip)["result"]["links"]}
    assert links["beach.png"]["attachment"] and links["map.pdf"]["attachment"]
    assert not links["packing list"]["attachment"] and not links["release 1.2"]["attachment"]


# -- `sync` re-parses permanently broken PDFs every time ------------------------------------


def test_sync_passes_over_a_broken_pdf_until_it_changes(
    terminal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docshelf.ingest.sync import Sync

    folder = tmp_path / "papers"
    folder.mkdir()
    broken = folder / "broken.pdf"
    broken.write_bytes(b"not a pdf at all " * 8)
    (folder / "fine.md").write_text("# Fine\n\nThis one reads.\n")
    parsed: list[str] = []
    real = Sync.prepare

    def counting(self: Sync, data: bytes, file_type: str, path: str, *a: Any, **k: Any) -> Any:
        parsed.append(Path(path).name)
        return real(self, data, file_type, path, *a, **k)

    monkeypatch.setattr(Sync, "prepare", counting)
    with Shelf(terminal, embedder=None) as shelf:
        first = shelf.add(folder)
    assert parsed.count("broken.pdf") == 1 and "not a PDF" in first.failures[0].reason

    shown = human("sync")
    assert parsed.count("broken.pdf") == 1  # not parsed again: its bytes failed as they are
    assert "Synced: 1 unchanged, 1 failed" in shown
    row = " ".join(shown.split())
    assert f"✗ {broken}: not a PDF (no %PDF- header) — failed (unchanged since " in row
    result = envelope("sync")["result"]
    assert result["counts"]["failed"] == 1 and result["failures"][0]["unchanged_since"] > 0
    status = envelope("status")["result"]
    assert status["failed"] == 1 and status["failures"][0]["path"] == str(broken)

    stat = broken.stat()  # touched (the same bytes): read, not parsed
    os.utime(broken, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert envelope("sync")["result"]["failures"][0]["unchanged_since"] > 0
    assert parsed.count("broken.pdf") == 1

    broken.write_bytes(b"still not a pdf, but other bytes " * 4)  # changed: parsed again
    again = envelope("sync")["result"]
    assert parsed.count("broken.pdf") == 2 and "unchanged_since" not in again["failures"][0]
    envelope("sync")
    assert parsed.count("broken.pdf") == 2


def test_sync_tries_a_failure_of_the_machine_again_and_a_new_parser_too(
    terminal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time or memory limit is no verdict on the bytes (``OverLimit``): the next sync
    parses the file again; so does a docshelf whose parsers changed."""
    from docshelf.errors import OverLimit
    from docshelf.ingest.sync import Sync

    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "slow.md").write_text("# Slow\n\nA note the machine was too busy to read.\n")
    (folder / "broken.pdf").write_bytes(b"not a pdf at all " * 8)
    parsed: list[str] = []
    real = Sync.prepare

    def over_limit(self: Sync, data: bytes, file_type: str, path: str, *a: Any, **k: Any) -> Any:
        parsed.append(Path(path).name)
        if path.endswith("slow.md"):
            raise OverLimit("markdown parser exceeded the 60 s time limit")
        return real(self, data, file_type, path, *a, **k)

    monkeypatch.setattr(Sync, "prepare", over_limit)
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
        shelf.sync()
        assert sorted(parsed) == ["broken.pdf", "slow.md", "slow.md"]
    monkeypatch.setattr("docshelf.__version__", "a later docshelf")
    with Shelf(terminal, embedder=None) as shelf:
        shelf.sync()
    assert sorted(parsed) == ["broken.pdf", "broken.pdf", "slow.md", "slow.md", "slow.md"]


def test_a_settled_failure_outlives_a_reopened_library(terminal: Path, tmp_path: Path) -> None:
    """What sync remembers of a failed file is in the store (both stores: test_store)."""
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "broken.pdf").write_bytes(b"not a pdf at all " * 8)
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(folder)
    time.sleep(0.01)
    with Shelf(terminal, embedder=None) as shelf:
        report = shelf.sync()
    assert [f.skipped for f in report.failures] == [True]
