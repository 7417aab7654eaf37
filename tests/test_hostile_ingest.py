"""Regression tests for the ingest side of issue 17: FIFOs, names that are not
UTF-8, symlinks leading outside a source, huge one-line text, a full disk,
terminal escapes in human output, and the permissions of the library."""

from __future__ import annotations

import gc
import json
import os
import pty
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import docshelf.parse as parse_mod
from docshelf.chunk import ChunkSettings, chunk_document
from docshelf.chunk.tokens import approx_tokens
from docshelf.cli import app
from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.ingest.prepare import chunk_parsed, read_file
from docshelf.parse import parse
from docshelf.parse.sandbox import run_limited
from docshelf.search.engines import own_engines
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests import pg

runner = CliRunner()


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``, failing the test (instead of hanging it) if it takes longer."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s (blocked?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _ids(shelf: Shelf, word: str) -> list[str]:
    return [cid for cid, _ in own_engines(shelf.store).lexical.search([word], 10, SearchFilters())]


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nThe harbour lantern.\n")
    (root / "zz-last.md").write_text("# Last\n\nThe copper meadow.\n")
    return root


# -- 1. a FIFO ----------------------------------------------------------------------------


def test_a_fifo_is_reported_not_opened(shelf: Shelf, tmp_path: Path) -> None:
    root = _folder(tmp_path)
    os.mkfifo(root / "pipe.md")
    report = within(20, lambda: shelf.add(root))
    assert [(Path(f.path).name, f.reason) for f in report.failures] == [
        ("pipe.md", "not a regular file")
    ]
    assert report.added == 2
    again = within(20, shelf.sync)
    assert [f.reason for f in again.failures] == ["not a regular file"]


def test_reading_a_fifo_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(InvalidInput, match="not a regular file"):
        within(20, lambda: read_file(tmp_path / "pipe.md", 1 << 20))


def test_a_fifo_as_a_single_file_source(shelf: Shelf, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    report = within(20, lambda: shelf.add(tmp_path / "pipe.md"))
    assert [f.reason for f in report.failures] == ["not a regular file"]


# -- 2. names that are not UTF-8 ----------------------------------------------------------


def _bad_names(root: Path) -> list[str]:
    """A file and a folder (with a note inside) whose names are Latin-1; their paths as
    reported (the bytes that are not UTF-8 as \\xNN)."""
    raw = os.fsencode(root)
    Path(os.fsdecode(raw + b"/caf\xe9.md")).write_text("# Cafe\n\nFine text, bad name.\n")
    os.mkdir(raw + b"/dir\xff")
    Path(os.fsdecode(raw + b"/dir\xff/inside.md")).write_text("# Inside\n\nAlso fine.\n")
    return [f"{root}/caf\\xe9.md", f"{root}/dir\\xff"]


def _pg_settings(home: Path, url: str) -> Settings:
    return Settings(home=home, database_url=url, embedder="none")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_names_that_are_not_utf8_fail_alone(backend: str, tmp_path: Path) -> None:
    root = _folder(tmp_path)
    shown = _bad_names(root)

    def check(shelf: Shelf) -> None:
        report = shelf.add(root)
        assert sorted(f.path for f in report.failures) == sorted(shown)
        assert {f.reason for f in report.failures} == {
            "the name is not valid UTF-8; rename it to index it"
        }
        assert report.added == 2 and _ids(shelf, "lantern") and _ids(shelf, "meadow")
        assert shelf.status().failure_count == 2  # stored, on either backend
        again = shelf.sync()
        assert again.failed == 2 and again.removed == 0

    if backend == "sqlite":
        with Shelf(tmp_path / "home", embedder=None) as shelf:
            check(shelf)
    else:
        with (
            pg.fresh_schema() as url,
            Shelf(settings=_pg_settings(tmp_path / "home", url), embedder=None) as shelf,
        ):
            check(shelf)


def test_names_that_are_not_utf8_in_json_and_status(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    shown = _bad_names(root)
    env = {"DOCSHELF_EMBEDDER": "none"}
    added = runner.invoke(app, ["--json", "add", str(root)], env=env)
    assert added.exit_code == 0, added.output
    result = json.loads(added.stdout)["result"]
    assert sorted(f["path"] for f in result["failures"]) == sorted(shown)
    assert result["counts"]["added"] == 2
    status = runner.invoke(app, ["--json", "status"], env=env)
    assert json.loads(status.stdout)["result"]["failed"] == 2


def test_a_source_whose_own_name_is_not_utf8_is_refused(shelf: Shelf, tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/vault\xe9"
    os.mkdir(raw)
    with pytest.raises(InvalidInput, match=r"vault\\xe9: the name is not valid UTF-8"):
        shelf.add(os.fsdecode(raw))
    assert shelf.sources() == []


# -- 4. symlinks leading outside the source -----------------------------------------------


def _escapes(tmp_path: Path) -> Path:
    root = _folder(tmp_path)
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.md").write_text("# Secret\n\nThe passphrase is tangerine.\n")
    (outside / "folder" / "more.md").write_text("# More\n\nThe word is persimmon.\n")
    (root / "passwd.md").symlink_to(outside / "secret.md")
    (root / "linked").symlink_to(outside / "folder", target_is_directory=True)
    (root / "inside.md").symlink_to(root / "good.md")  # inside: followed
    return root


def test_symlinks_leading_outside_are_not_followed_by_default(shelf: Shelf, tmp_path: Path) -> None:
    root = _escapes(tmp_path)
    report = shelf.add(root)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert set(reasons) == {"passwd.md", "linked"}
    assert all("outside the source" in r for r in reasons.values())
    assert not _ids(shelf, "tangerine") and not _ids(shelf, "persimmon")
    assert f"{root}/inside.md" in shelf.store.files_of_source(report.source_id or "")
    assert shelf.sources()[0].follow_symlinks is False


def test_following_symlinks_is_a_remembered_choice(shelf: Shelf, tmp_path: Path) -> None:
    root = _escapes(tmp_path)
    report = shelf.add(root, follow_symlinks=True)
    # inside.md too, a copy of good.md
    assert report.failures == [] and (report.added, report.copies) == (4, 1)
    assert _ids(shelf, "tangerine") and _ids(shelf, "persimmon")
    assert shelf.sources()[0].follow_symlinks is True
    (tmp_path / "outside" / "folder" / "new.md").write_text("# New\n\nA quince.\n")
    assert shelf.sync().added == 1  # the choice holds for later syncs
    assert shelf.add(root).failures == []  # and for a re-add that does not say
    turned_off = shelf.add(root, follow_symlinks=False)
    assert turned_off.removed == 3 and len(turned_off.failures) == 2
    assert not _ids(shelf, "tangerine")


def test_the_cli_option_follows_symlinks(tmp_path: Path) -> None:
    root = _escapes(tmp_path)
    env = {"DOCSHELF_EMBEDDER": "none"}
    plain = runner.invoke(app, ["--json", "add", str(root)], env=env)
    assert len(json.loads(plain.stdout)["result"]["failures"]) == 2
    follow = runner.invoke(app, ["--json", "add", str(root), "--follow-symlinks"], env=env)
    assert json.loads(follow.stdout)["result"]["failures"] == []
    listed = json.loads(runner.invoke(app, ["--json", "list"], env=env).stdout)["result"]
    assert [s["follow_symlinks"] for s in listed["sources"]] == [True]


def test_export_and_import_keep_the_choice(tmp_path: Path) -> None:
    root = _escapes(tmp_path)
    archive = tmp_path / "library.zip"

    def cli(home: str, *args: str) -> dict[str, Any]:
        env = {"DOCSHELF_EMBEDDER": "none", "DOCSHELF_HOME": str(tmp_path / home)}
        envelope: dict[str, Any] = json.loads(runner.invoke(app, ["--json", *args], env=env).stdout)
        assert envelope["ok"], envelope
        result: dict[str, Any] = envelope["result"]
        return result

    cli("a", "add", str(root), "--follow-symlinks")
    cli("a", "export", str(archive))
    cli("b", "import", str(archive))
    assert [s["follow_symlinks"] for s in cli("b", "list")["sources"]] == [True]


def test_the_store_keeps_the_choice(store_url: str, tmp_path: Path) -> None:
    from docshelf.model import Source
    from docshelf.store import open_store

    store = open_store(store_url)
    try:
        store.add_source(Source("src_1", str(tmp_path), "folder", "h", 1.0, None, True))
        store.add_source(Source("src_2", str(tmp_path / "b"), "folder", "h", 1.0))
        assert [s.follow_symlinks for s in store.list_sources()] == [True, False]
        store.set_follow_symlinks("src_1", False)
        assert store.get_source("src_1").follow_symlinks is False  # type: ignore[union-attr]
    finally:
        store.close()


# -- 7. huge one-line text ----------------------------------------------------------------


def test_large_text_is_parsed_under_the_sandbox_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_mod, "IN_PROCESS_BYTES", 1024)
    monkeypatch.setenv("DOCSHELF_PARSE_TIMEOUT_S", "0.001")
    data = ("# Big\n\n" + "word " * 2000).encode()
    for file_type in ("markdown", "text"):
        with pytest.raises(InvalidInput, match=f"{file_type} parser exceeded the 0.001 s"):
            parse(data, file_type)
    monkeypatch.delenv("DOCSHELF_PARSE_TIMEOUT_S")
    assert parse(data, "markdown").title == "Big"
    with pytest.raises(InvalidInput, match="binary"):  # decoded in the child: same reasons
        parse(b"\x00" * 2048, "text")


def test_the_child_makes_and_sends_a_large_files_chunks_a_batch_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sandbox's child never holds more chunks than one batch (it held all of a 25 MB
    file's 61k, then sent them): each is made as its batch is taken, and a batch is cut
    by characters as well as by count. The chunks are those of an ordinary chunking."""
    import pickle

    from docshelf.ingest import prepare
    from docshelf.model import Chunk
    from docshelf.parse import sandbox

    monkeypatch.setattr(prepare, "BATCH_CHARACTERS", 20_000)
    body = "# Long\n\n" + " ".join(f"word{i % 50}" for i in range(60_000))  # ~0.4 MB
    chunking = prepare.Chunking(ChunkSettings(), approx_tokens)

    def alive() -> int:
        # (type(o), not isinstance: that reads __class__, which a deprecated torch alias
        # answers with a FutureWarning)
        return sum(type(o) is Chunk for o in gc.get_objects())

    before = alive()
    sent: list[tuple[str, bytes]] = []
    held: list[int] = []

    class Pipe:  # what the parent would receive, pickled as a pipe would carry it
        def send(self, message: tuple[str, Any]) -> None:
            if message[0] == "part":
                held.append(alive() - before)
            sent.append((message[0], pickle.dumps(message[1])))

    batch = 100
    answer = prepare._chunk_in_child(
        "markdown", "f" * 64, None, "x", chunking, (None, None), batch, body.encode()
    )
    sandbox._send_batched(Pipe(), answer)  # type: ignore[arg-type]
    head = pickle.loads(sent[0][1])
    parts = [pickle.loads(data) for kind, data in sent[1:]]
    assert [kind for kind, _ in sent] == ["head"] + ["part"] * len(parts)
    assert len(parts) > 10 and max(held) <= batch
    assert all(len(part) <= batch for part in parts)
    assert all(sum(len(c.text) for c in part[:-1]) < 20_000 for part in parts)
    assert any(len(part) < batch for part in parts[:-1])  # cut by its characters
    want = chunk_parsed(
        parse(body.encode(), "markdown"), fp="f" * 64, title="Long", chunking=chunking
    )
    assert [c for part in parts for c in part] == want.chunks
    assert head.fields == want.fields() and head.chunks == []


def test_a_fresh_child_sends_an_iterators_items_as_it_makes_them() -> None:
    """Across a real pipe: at most one batch of items alive in the child at a time."""
    from tests import sandbox_jobs

    births: list[int] = []
    seen: list[int] = []

    def take(head: object, part: list[int]) -> None:
        births.extend(part)
        seen.append(len(part))

    answer = run_limited(sandbox_jobs.tracked, b"1050", "test", fresh=True, on_part=take)
    assert answer.head == "head" and answer.items == []
    assert seen == [100] * 10 + [50] and len(births) == 1050
    assert max(births) <= 100 + 1  # a batch, and the last one sent (not yet let go)
    whole = run_limited(sandbox_jobs.pairs, b"5001", "test", fresh=True)
    assert whole.items == [(i, str(i)) for i in range(5001)]


def test_a_large_files_preparation_leaves_no_process_behind(tmp_path: Path) -> None:
    """A new interpreter as the child: no fork server and no resource tracker start for
    a large file (they stayed beside ``serve`` and ``add``: 52 MB of RSS), and the
    child is gone once its chunks are in."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    script = tmp_path / "prepare_large.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, os
            from pathlib import Path
            import docshelf.parse as parse_mod
            from docshelf.chunk import ChunkSettings, approx_tokens
            from docshelf.ingest.prepare import Chunking, chunk_file

            parse_mod.IN_PROCESS_BYTES = 1024
            body = "# Big" + chr(10) * 2 + " ".join(f"w{i % 97}" for i in range(20_000))
            done = chunk_file(
                body.encode(), file_type="markdown", fp="c" * 64, title=None,
                fallback_title="x", chunking=Chunking(ChunkSettings(), approx_tokens),
            )
            mine = os.getpid()
            children = []
            for entry in Path("/proc").iterdir():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(fields[1]) == mine:
                    children.append((entry / "cmdline").read_bytes().decode(errors="replace"))
            print(json.dumps({"away": done.pid != mine, "chunks": len(done.chunks),
                              "children": children}))
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(out.stdout)
    assert report["away"] and report["chunks"] > 20
    assert report["children"] == []


@pytest.mark.parametrize(
    ("job", "kwargs", "reason"),
    [
        ("sleepy", {"timeout_s": 0.3}, r"^pdf parser exceeded the 0\.3 s time limit$"),
        ("hog", {"memory_mb": 128}, r"^html parser exceeded the 128 MB memory limit$"),
        ("crash", {}, r"^docx parser crashed \(signal 11\)$"),
        ("buggy", {}, r"^rst parser failed: ValueError: unexpected x$"),
    ],
)
def test_a_fresh_child_has_the_fork_servers_limits_and_reasons(
    job: str, kwargs: dict[str, Any], reason: str
) -> None:
    from tests import sandbox_jobs

    file_type = reason.split()[0].lstrip("^")
    with pytest.raises(InvalidInput, match=reason):
        run_limited(getattr(sandbox_jobs, job), b"x", file_type, fresh=True, **kwargs)


def test_a_fresh_childs_phases_each_get_the_time_limit() -> None:
    from tests import sandbox_jobs

    assert run_limited(sandbox_jobs.two_phases, b"yes", "text", timeout_s=4.0, fresh=True) == "done"
    with pytest.raises(InvalidInput, match="exceeded the 4 s time limit"):
        run_limited(sandbox_jobs.two_phases, b"no", "text", timeout_s=4.0, fresh=True)


def test_a_fresh_child_is_the_callers_own_and_ends_with_it(tmp_path: Path) -> None:
    """Not a fork server's: its parent is the caller; and killed with the caller (no
    one would enforce its time limit after that), as a fork server's child is not."""
    from tests import sandbox_jobs

    parent, child = run_limited(sandbox_jobs.parent_and_self, b"", "test", fresh=True)
    assert parent == os.getpid() != child
    told = tmp_path / "pid"
    caller = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from docshelf.parse.sandbox import run_limited; "
            "from tests.sandbox_jobs import tell_and_wait; "
            "run_limited(tell_and_wait, sys.argv[1], 'test', timeout_s=600, fresh=True)",
            str(told),
        ],
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        for _ in range(300):
            if told.exists() and told.read_text():
                break
            time.sleep(0.1)
        pid = int(told.read_text())
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait(10)
        for _ in range(100):
            if not _running(pid):
                break
            time.sleep(0.1)
        assert not _running(pid)
    finally:
        caller.kill()
        caller.wait(10)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_chunking_a_huge_line_never_counts_a_huge_text() -> None:
    """Memory and time stay in proportion to the chunks, not to the block being cut."""
    body = " ".join(f"word{i % 50}" for i in range(200_000))  # ~1.4 MB, one line
    parsed = parse(body.encode(), "text")
    longest = [0]

    def counting(text: str) -> int:
        longest[0] = max(longest[0], len(text))
        return approx_tokens(text)

    settings = ChunkSettings()
    chunks = chunk_document(
        parsed, fp="f" * 64, title="t", settings=settings, count_tokens=counting
    )
    assert chunks and "".join(c.text for c in chunks if c.tier.value == "snippet").count(" ") > 0
    # a cut counts at most two chunks' worth (to balance the last two: chunk/_balanced)
    assert longest[0] <= 8 * 2 * (settings.section_max_tokens + 1) + 64 * 8


def test_a_huge_line_of_few_tokens_per_character_is_cut_in_linear_work() -> None:
    """A line whose words sit far apart (runs of spaces count no tokens): a span's count
    is probed in growing steps, never taken over the whole rest at every cut (which
    counted 25x the text here, and grows with the square of its length)."""
    body = " ".join(f"word{i % 50}" + " " * 40 for i in range(20_000))  # ~0.9 MB
    parsed = parse(body.encode(), "text")
    counted, longest = [0], [0]

    def counting(text: str) -> int:
        counted[0] += len(text)
        longest[0] = max(longest[0], len(text))
        return approx_tokens(text)

    chunks = chunk_document(
        parsed, fp="f" * 64, title="t", settings=ChunkSettings(), count_tokens=counting
    )
    assert len(chunks) > 100
    assert counted[0] < 10 * len(body)
    assert longest[0] < len(body) / 10


def test_headings_keep_their_plain_text_without_parsing_the_body_inline() -> None:
    parsed = parse(b"# A *bold* `code` title\n\nBody with *emphasis* [link](x).\n", "markdown")
    assert parsed.title == "A bold code title"
    assert "Body with *emphasis* [link](x)." in parsed.body


# -- 9. a full disk ---------------------------------------------------------------------------


def _add_under_file_size_limit(home: Path, folder: Path, limit: int | None) -> dict[str, Any]:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")},
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": "none",
        "DOCSHELF_ENRICH": "off",
    }
    out = subprocess.run(
        [sys.executable, "-m", "docshelf.cli", "--json", "add", str(folder)],
        env=env,
        preexec_fn=cap,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip(), out.stderr[-2000:]  # an envelope, not a traceback
    envelope: dict[str, Any] = json.loads(out.stdout)
    return envelope


def _big_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "big"
    folder.mkdir()
    paragraphs = (" ".join(f"w{(i * 7 + j) % 5000}" for j in range(120)) for i in range(2500))
    (folder / "big.md").write_text("# Big\n\n" + "\n\n".join(paragraphs) + "\n")
    return folder


def test_a_write_that_fails_for_space_is_reported_and_recovers(tmp_path: Path) -> None:
    """Over the file-size limit SQLite's write fails mid-transaction and SQLite rolls the
    transaction back itself: the error must reach the user, not a failed ROLLBACK."""
    folder = _big_folder(tmp_path)
    home = tmp_path / "home"
    failed = _add_under_file_size_limit(home, folder, 600_000)
    assert failed["ok"] is False
    assert "cannot rollback" not in failed["error"]["message"]
    assert "SQLite" in failed["error"]["message"] or "full" in failed["error"]["message"]
    done = _add_under_file_size_limit(home, folder, None)  # space is back
    assert done["ok"] is True and done["result"]["counts"]["added"] == 1


def test_first_add_on_a_full_disk_says_so(tmp_path: Path) -> None:
    """A real full file system (a 4 MB tmpfs), when this machine lets us mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip() or made.returncode}")
    try:
        failed = _add_under_file_size_limit(mount / "home", _big_folder(tmp_path), None)
        assert failed["ok"] is False
        assert "database or disk is full" in failed["error"]["message"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# -- 11. terminal escapes -------------------------------------------------------------------


_CSI_CLEAR = "\x1b[2J"
_OSC_TITLE = "\x1b]0;owned\x07"


def _on_a_terminal(home: Path, *args: str) -> str:
    """The human output of ``docshelf ARGS`` run on a pseudo-terminal."""
    main, secondary = pty.openpty()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")},
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": "none",
        "DOCSHELF_ENRICH": "off",
        "DOCSHELF_SEARCH_HELPER": "off",  # a search answers here, leaving no helper behind
        "COLUMNS": "250",
        "TERM": "xterm",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    proc.wait(60)
    return b"".join(chunks).decode("utf-8", "replace")


def test_escapes_in_names_and_text_are_shown_escaped_on_a_terminal(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / f"evil{_CSI_CLEAR}.md").write_text(
        f"# Title {_OSC_TITLE}here\n\nlantern {_CSI_CLEAR} text\n"
    )
    (root / f"empty{_OSC_TITLE}.md").write_bytes(b"")  # a failure, shown by status
    home = tmp_path / "home"
    added = runner.invoke(
        app,
        ["--json", "add", str(root)],
        env={"DOCSHELF_HOME": str(home), "DOCSHELF_EMBEDDER": "none"},
    )
    envelope = json.loads(added.stdout)
    assert envelope["result"]["counts"]["added"] == 1
    # JSON is data: the name as it is (JSON escapes the control characters itself)
    assert any(_OSC_TITLE in f["path"] for f in envelope["result"]["failures"])
    doc_id = json.loads(
        runner.invoke(app, ["--json", "list"], env={"DOCSHELF_HOME": str(home)}).stdout
    )["result"]["documents"][0]["id"]
    for args in (["list"], ["search", "lantern"], ["show", doc_id], ["status"], ["add", str(root)]):
        shown = _on_a_terminal(home, *args)
        assert _CSI_CLEAR not in shown and _OSC_TITLE not in shown, (args, shown)
        assert "\\x1b" in shown, (args, shown)


@given(st.text())
def test_printable_leaves_no_control_characters(text: str) -> None:
    from docshelf.terminal import printable

    shown = printable(text)
    assert all(c in "\n\t" or not (c < " " or "\x7f" <= c < "\xa0") for c in shown)
    assert "\u202e" not in shown
    if text.isprintable():
        assert shown == text


def test_printable_tree_covers_keys_and_nested_values() -> None:
    from docshelf.terminal import printable_tree

    tree = {"a\x1b": ["b\x9b", {"c": "\u202ed"}], "n": 3, "ok": None}
    assert printable_tree(tree) == {"a\\x1b": ["b\\x9b", {"c": "\\u202ed"}], "n": 3, "ok": None}


# -- 13. permissions ---------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_home_is_private_and_so_is_the_database(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        home = tmp_path / "new" / "home"
        with Shelf(home, embedder=None) as shelf:
            shelf.add(_folder(tmp_path))
            assert _mode(home) == 0o700
            database = home / "docshelf.db"
            assert _mode(database) == 0o600
            for extra in ("docshelf.db-wal", "docshelf.db-shm"):
                assert _mode(home / extra) == 0o600, extra
    finally:
        os.umask(old)


def test_a_database_elsewhere_is_private_too(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        db = tmp_path / "elsewhere" / "lib.db"
        settings = Settings(home=tmp_path / "home", database_url=f"sqlite:///{db}", embedder="none")
        with Shelf(settings=settings, embedder=None):
            assert _mode(db) == 0o600 and _mode(db.parent) == 0o700
    finally:
        os.umask(old)
