"""The resident search helper (cli/resident.py) and the typer-free JSON search
(cli/quick.py): the same JSON as a search in the process, never another user's
library, never a stale generation, never a helper that outlives its idle time."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.testing

from docshelf import views
from docshelf.cli import app, quick, resident
from docshelf.cli.resident import Helper, SearchRequest
from docshelf.config import Settings
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.servers import gone, wait_for

REQUESTS = [
    SearchRequest("leader election heartbeat", 10, "hybrid", [], "snippet", None),
    SearchRequest("flour", 3, "lexical", [], "snippet", None),
    SearchRequest("replicated log", 5, "vector", [], "snippet", None),
    SearchRequest("flour", 10, "hybrid", ["tag=baking"], "document", None),
    SearchRequest("votes", 2, "hybrid", [], "snippet", "parent-section"),
    SearchRequest("zebra quantum xylophone", 10, "hybrid", [], "snippet", None),
]


def in_process(shelf: Shelf, r: SearchRequest) -> dict[str, Any]:
    from docshelf.search.filters_model import Filters

    found = shelf.search(
        r.query,
        limit=r.limit,
        mode=r.mode,
        filters=Filters.parse(r.filters).to_search_filters(shelf.taxonomy),
        group=r.group,
        expand=r.expand,
    )
    travelled: dict[str, Any] = json.loads(json.dumps(views.search(found)))  # as it travels
    return travelled


class Running:
    """A helper answering in a thread of this process (its shelf has the hash embedder)."""

    def __init__(self, helper: Helper) -> None:
        self.helper = helper
        helper.bind()
        self.thread = threading.Thread(target=helper.serve, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.helper.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def library(isolated_home: Path, notes: Path) -> Iterator[Shelf]:
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        shelf._cache.clear()
        yield shelf


@pytest.fixture
def helper(library: Shelf) -> Iterator[Running]:
    running = Running(Helper(library, idle_seconds=600, poll=0.02))
    yield running
    running.stop()


def settings() -> Settings:
    return Settings.from_env()


def test_the_helper_answers_with_the_in_process_json(library: Shelf, helper: Running) -> None:
    with_hits = 0
    for request in REQUESTS:
        reply = resident.ask(settings(), request)
        assert reply.refused is None and reply.result is not None, reply
        library._cache.clear()
        assert reply.result == in_process(library, request)
        with_hits += bool(reply.result["hits"])
    assert with_hits >= 4


def test_the_cli_prints_the_helpers_answer_as_its_own(
    library: Shelf, helper: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "use": the CLI's own fallback would bind the packaged model, which this library
    # (hash vectors) refuses, so an envelope with hits can only be the helper's.
    monkeypatch.setenv("DOCSHELF_SEARCH_HELPER", "use")
    out = typer.testing.CliRunner().invoke(
        app, ["--json", "search", "leader election heartbeat", "-n", "3"]
    )
    envelope = json.loads(out.stdout)
    assert envelope["ok"] is True, envelope
    library._cache.clear()
    request = SearchRequest("leader election heartbeat", 3, "hybrid", [], "snippet", None)
    assert envelope["result"] == in_process(library, request)
    top = envelope["result"]["hits"][0]
    assert envelope["next_actions"][0]["command"] == (
        f"docshelf context {top['chunk_id']} --mode parent-section "
        f"--anchor {top['citation']['anchor']}"
    )


def test_a_write_is_seen_at_once(library: Shelf, helper: Running, notes: Path) -> None:
    request = SearchRequest("marmalade", 10, "hybrid", [], "snippet", None)
    assert resident.ask(settings(), request).result == in_process(library, request)
    (notes / "jam.md").write_text("# Jam\n\nSeville oranges make the best marmalade.\n")
    library.sync()
    reply = resident.ask(settings(), request)
    assert reply.result is not None and reply.result["hits"], reply
    assert reply.result == in_process(library, request)


def test_a_reply_from_an_older_generation_is_refused(library: Shelf) -> None:
    class Stale(Helper):
        def reply(self, message: Any) -> tuple[dict[str, Any], bool]:
            answer, go_on = super().reply(message)
            answer["generation"] -= 1  # as a helper reading an old snapshot would
            return answer, go_on

    running = Running(Stale(library, idle_seconds=600, poll=0.02))
    try:
        reply = resident.ask(settings(), REQUESTS[0])
        assert reply.result is None and "older generation" in str(reply.refused)
    finally:
        running.stop()


def test_other_settings_or_code_are_refused(
    library: Shelf, helper: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_CONCEPT_BOOST", "2")
    reply = resident.ask(settings(), REQUESTS[0])
    assert reply.result is None and reply.refused == "refused: another settings"
    monkeypatch.delenv("DOCSHELF_CONCEPT_BOOST")
    monkeypatch.setenv("DOCSHELF_SEARCH_HELPER_IDLE", "5")  # the helper's own: no matter
    assert resident.ask(settings(), REQUESTS[0]).result is not None
    monkeypatch.setattr(resident, "code_stamp", lambda: "another version")
    assert resident.ask(settings(), REQUESTS[0]).refused == "refused: another code"


def test_a_replaced_library_is_refused_and_its_helper_leaves(
    library: Shelf, isolated_home: Path, notes: Path
) -> None:
    helper = Running(Helper(library, idle_seconds=600, poll=60))  # the request comes first
    for name in ("docshelf.db", "docshelf.db-wal", "docshelf.db-shm"):
        (isolated_home / name).unlink(missing_ok=True)
    with Shelf(isolated_home, embedder=HashEmbedder()) as other:
        other.add(notes / "todo.txt")
        reply = resident.ask(settings(), REQUESTS[1])
        assert reply.result is None and reply.refused == "refused: the library was replaced"
    helper.thread.join(10)
    assert not helper.thread.is_alive()  # it left after saying so
    assert not (isolated_home / resident.SOCKET).exists()


def test_a_socket_not_owned_by_this_user_is_never_used(
    library: Shelf, helper: Running, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    path = isolated_home / resident.SOCKET
    assert resident.trusted_socket(isolated_home) == (path, "ok")
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)  # we are someone else
    reply = resident.ask(settings(), REQUESTS[0])
    assert reply.result is None and reply.refused == "not trusted: owned by another user"
    monkeypatch.setattr(os, "geteuid", lambda: real)
    os.chmod(path, 0o666)
    assert resident.ask(settings(), REQUESTS[0]).refused == "not trusted: open to other users"
    os.chmod(path, 0o600)
    assert resident.ask(settings(), REQUESTS[0]).result is not None


def test_a_file_in_place_of_the_socket_is_not_trusted(isolated_home: Path, library: Shelf) -> None:
    (isolated_home / resident.SOCKET).write_text("not a socket")
    assert resident.ask(settings(), REQUESTS[0]).refused == "not trusted: not a socket"


def test_the_helper_says_nothing_to_another_user(library: Shelf, helper: Running) -> None:
    helper.helper.uid = os.geteuid() + 1  # as if we were another user to it
    reply = resident.ask(settings(), REQUESTS[0])
    assert reply.result is None and str(reply.refused).startswith("no answer")


def test_the_helper_keeps_serving_after_hostile_requests(
    library: Shelf, helper: Running, isolated_home: Path
) -> None:
    search: dict[str, Any] = REQUESTS[1]._asdict()
    good: dict[str, Any] = {**helper.helper.expect, "search": search}
    hostile: list[bytes] = [
        b"",
        b"\xff\xfe not json\n",
        b"[1, 2, 3]\n",
        b'"a string"\n',
        json.dumps({**good, "search": {"query": "x"}}).encode() + b"\n",
        json.dumps({**good, "search": {**search, "limit": "ten"}}).encode() + b"\n",
        json.dumps({**good, "search": {**search, "mode": "psychic"}}).encode() + b"\n",
        json.dumps({**good, "search": [1]}).encode() + b"\n",
        b"{" * (resident.MAX_LINE + 10),
        b'{"protocol": 1',  # cut short
    ]
    replies = []
    for payload in hostile:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            with resident._Address(isolated_home / resident.SOCKET) as addr:
                conn.connect(addr)
            conn.settimeout(10)
            try:
                conn.sendall(payload)
                conn.shutdown(socket.SHUT_WR)
                replies.append(conn.recv(1 << 20))
            except OSError:
                replies.append(b"")
    for raw in replies:
        if raw:
            assert json.loads(raw)["ok"] is False
    assert resident.ask(settings(), REQUESTS[1]).result is not None  # still serving


# -- a real helper process -----------------------------------------------------------


def _lexical_library(home: Path, notes: Path) -> None:
    with Shelf(home, embedder=None) as shelf:
        shelf.add(notes)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(DOCSHELF_HOME=str(home), DOCSHELF_EMBEDDER="none", DOCSHELF_ENRICH="off")
    env.update(extra)
    return env


def _cli(home: Path, *args: str, **extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "docshelf.cli", *args],
        env=_env(home, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _helper_pid(home: Path) -> int:
    return int((home / resident.LOCK).read_text().strip())


def test_a_search_starts_a_helper_that_answers_the_next_with_the_same_json(
    tmp_path: Path, notes: Path
) -> None:
    home = tmp_path / "lib"
    _lexical_library(home, notes)
    args = ("search", "flour starter", "--json")
    alone = _cli(home, *args, DOCSHELF_SEARCH_HELPER="off")
    first = _cli(home, *args, DOCSHELF_SEARCH_HELPER="auto", DOCSHELF_SEARCH_HELPER_IDLE="60")
    assert first == alone
    wait_for(lambda: (home / resident.SOCKET).exists(), "the helper's socket")
    pid = _helper_pid(home)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in _env(home).items():
                mp.setenv(key, value)
            request = SearchRequest("flour starter", 10, "hybrid", [], "snippet", None)
            assert resident.ask(settings(), request).result  # the helper answers
        helped = _cli(home, *args, DOCSHELF_SEARCH_HELPER="use")
        assert helped == alone
        # a second `auto` search does not start a second helper (the lock is held)
        _cli(home, *args, DOCSHELF_SEARCH_HELPER="auto")
        assert _helper_pid(home) == pid
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: gone(pid), "the helper to stop on SIGTERM")
    assert not (home / resident.SOCKET).exists()


def test_the_helper_exits_when_idle(tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "lib"
    _lexical_library(home, notes)
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli.resident", str(home)],
        env=_env(home, DOCSHELF_SEARCH_HELPER_IDLE="0.5"),
    )
    try:
        wait_for(lambda: (home / resident.SOCKET).exists() or proc.poll() is not None, "a socket")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (home / resident.SOCKET).exists()


def test_a_second_helper_for_the_same_library_leaves_at_once(tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "lib"
    _lexical_library(home, notes)
    env = _env(home, DOCSHELF_SEARCH_HELPER_IDLE="60")
    first = subprocess.Popen([sys.executable, "-m", "docshelf.cli.resident", str(home)], env=env)
    try:
        wait_for(lambda: (home / resident.SOCKET).exists(), "the first helper's socket")
        second = subprocess.run(
            [sys.executable, "-m", "docshelf.cli.resident", str(home)], env=env, timeout=60
        )
        assert second.returncode == 0 and first.poll() is None
    finally:
        first.terminate()
        first.wait(timeout=30)


# -- the typer-free JSON search ------------------------------------------------------


# (how the quick path reads an argument line, against typer's: tests/test_cli.py)


def test_quick_prints_what_the_typer_app_prints(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "lib"
    _lexical_library(home, notes)
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    runner = typer.testing.CliRunner()
    for argv in (
        ["--home", str(home), "search", "flour", "--json"],
        ["--home", str(home), "--json", "search", "leader votes", "-n", "1", "--mode", "lexical"],
        ["--home", str(home), "search", "flour", "--filter", "tag=baking", "--group=document"],
        ["--home", str(home), "search", "zebra"],
        ["--home", str(home), "search", "flour", "--mode", "psychic"],  # an error envelope
        ["--home", str(home), "search", "flour", "--filter", "nonsense"],
        ["--home", str(home), "sync", "--json"],
        ["--home", str(home), "--json", "sync", "src_nope"],  # an error envelope
        ["--home", str(home), "status"],
        ["--home", str(home), "status", "--check", "--json"],
    ):
        failing = {"psychic", "nonsense", "src_nope"} & set(argv)
        with pytest.raises(SystemExit) if failing else _nothing():
            assert quick.main(argv)
        mine = capsys.readouterr().out
        theirs = runner.invoke(app, argv)
        assert mine == theirs.stdout, argv


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_json_search_loads_no_typer_and_a_helped_one_not_the_library(
    tmp_path: Path, notes: Path
) -> None:
    home = tmp_path / "lib"
    _lexical_library(home, notes)
    probe = (
        "import sys\nfrom docshelf.cli import main, quick\n"
        "quick.exit_now = lambda: None  # (so the lines after main() run)\n"
        "sys.argv = ['docshelf', 'search', 'flour', '--json']\nmain()\n"
        "heavy = ('typer', 'click', 'rich', 'pydantic', 'numpy', 'docshelf.shelf', "
        "'prometheus_client')\n"
        "print([m for m in heavy if m in sys.modules], file=sys.stderr)"
    )

    def loaded(**extra: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe], env=_env(home, **extra), capture_output=True, text=True
        )
        assert done.returncode == 0 and '"ok": true' in done.stdout, done.stderr
        return list(json.loads(done.stderr.strip().splitlines()[-1].replace("'", '"')))

    assert loaded(DOCSHELF_SEARCH_HELPER="off") == ["docshelf.shelf"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli.resident", str(home)],
        env=_env(home, DOCSHELF_SEARCH_HELPER_IDLE="60"),
    )
    try:
        wait_for(lambda: (home / resident.SOCKET).exists(), "the helper's socket")
        assert loaded(DOCSHELF_SEARCH_HELPER="use") == []
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_home_whose_name_needs_quoting(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "odd ?name #1 %20"
    monkeypatch.setenv("DOCSHELF_HOME", str(home))
    with Shelf(home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        running = Running(Helper(shelf, idle_seconds=600, poll=0.02))
        try:
            reply = resident.ask(settings(), REQUESTS[1])
            assert reply.refused is None, reply
            shelf._cache.clear()
            assert reply.result == in_process(shelf, REQUESTS[1])
        finally:
            running.stop()
