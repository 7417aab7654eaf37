"""`docshelf serve --worker-process` runs its ingest workers in a child process
(ingest/worker_process.py):
uploads are ingested there and their progress reaches SSE clients of the server; the
child stops with the server (SIGTERM: both drain, exit 0), never outlives it (SIGKILL
of the server: the child sees its lifeline close and exits), and is started again when
it dies on its own."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from docshelf.ingest.uploads import Intake
from docshelf.ingest.worker_process import WorkerProcess, lifeline
from docshelf.shelf import Shelf
from docshelf.store.notices import CommitNotices
from docshelf.transport.local import LocalTransport
from tests.test_cluster import STAGES, free_port
from tests.test_shutdown import env, until
from tests.test_web import HANDBOOK, browser, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser"]  # the browser fixture, shared with tests/test_web.py


def children(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def worker_child(pid: int) -> int | None:
    for child in children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"worker" in cmd and b"--lifeline" in cmd:
            return child
    return None


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, not yet reaped by its (dead) parent's reaper


@pytest.fixture
def served(isolated_home: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """A real `docshelf serve` (lexical only): (process, base URL, a user's token)."""
    with Shelf(isolated_home, embedder=None) as shelf:
        _, token = shelf.create_user("alice")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "serve", "--port", str(port), "--worker-process"],
        env=env(DOCSHELF_HOME=str(isolated_home), DOCSHELF_EMBEDDER="none"),
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    try:
        until("serve to be ready", ready, proc)
        until("its worker process", lambda: worker_child(proc.pid), proc)
        yield proc, base, token
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_upload_is_ingested_by_the_worker_process_and_its_progress_streams(
    served: tuple[subprocess.Popen[bytes], str, str],
) -> None:
    proc, base, token = served
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        reply = client.post(
            "/v1/documents", files={"file": ("raft.md", b"# Raft\n\nRaft elects a leader.\n")}
        )
        assert reply.status_code == 202
        doc_id = reply.json()["document_id"]
        stages = []
        with client.stream("GET", f"/v1/documents/{doc_id}/events") as events:
            for line in events.iter_lines():
                if line.startswith("data:"):
                    stages.append(json.loads(line[5:])["stage"])
                    if stages[-1] in ("complete", "failed"):
                        break
        transitions = [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]
        assert transitions == STAGES, stages
        hits = client.post("/v1/search", json={"query": "leader", "limit": 3}).json()["hits"]
        assert [h["document_id"] for h in hits] == [doc_id]
    # the server itself runs no ingest worker thread: the work was the child's
    assert worker_child(proc.pid) is not None


def test_sigterm_stops_the_server_and_its_worker_process_with_status_0(
    served: tuple[subprocess.Popen[bytes], str, str],
) -> None:
    proc, _, _ = served
    child = worker_child(proc.pid)
    assert child is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert gone(child)


def test_the_worker_process_never_outlives_a_killed_server(
    served: tuple[subprocess.Popen[bytes], str, str],
) -> None:
    proc, _, _ = served
    child = worker_child(proc.pid)
    assert child is not None
    proc.kill()  # SIGKILL: no lifespan, no signal to the child; only its lifeline closes
    proc.wait()
    deadline = time.monotonic() + 30
    while not gone(child):
        assert time.monotonic() < deadline, "the worker process outlived its server"
        time.sleep(0.05)


def test_a_worker_process_that_dies_is_started_again(
    served: tuple[subprocess.Popen[bytes], str, str],
) -> None:
    proc, base, token = served
    first = worker_child(proc.pid)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    until("a new worker process", lambda: worker_child(proc.pid) not in (None, first), proc)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        doc_id = client.post(
            "/v1/documents", files={"file": ("b.md", b"# B\n\nAfter the restart.\n")}
        ).json()["document_id"]

        def complete() -> bool:
            return bool(client.get(f"/v1/documents/{doc_id}").json()["status"] == "complete")

        until("the upload to be ingested by the new worker process", complete, proc)
        assert client.get("/readyz").status_code == 200


# -- the protocol, without a server ----------------------------------------------------------


def test_the_lifeline_relays_wakeups_and_commit_news_and_stops_at_eof() -> None:
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "rb")
    to_child = os.fdopen(write_end, "wb")
    out = io.BytesIO()
    stop = threading.Event()
    transport = LocalTransport()
    consumer = transport.consumer()
    notices = CommitNotices()
    told: list[Sequence[str]] = []
    notices.listener = told.append
    intake = Intake()
    lifeline(stop, transport, notices, intake, stdin=stdin, stdout=out)

    notices.tell(["doc_a", "doc_b"])
    assert told == [["doc_a", "doc_b"]]  # the listener already there still hears it
    assert out.getvalue() == b"events doc_a doc_b\n"

    to_child.write(b"wake\n")
    to_child.flush()
    assert consumer.wait(10)  # the child's own workers are woken
    assert not stop.is_set()

    # the server is receiving uploads: the child's workers wait for it to be done
    assert intake.quiet(0)
    to_child.write(b"busy\n")
    to_child.flush()
    assert intake.wait_busy(10) and not intake.quiet(0.2)
    to_child.write(b"quiet\n")
    to_child.flush()
    assert intake.quiet(10)
    to_child.write(b"busy\n")
    to_child.flush()
    assert intake.wait_busy(10)
    to_child.close()  # the server stopped, or died: nothing is held back any more
    assert stop.wait(10)
    assert intake.quiet(10)


def test_the_server_side_publishes_the_childs_news_and_wakes_it(tmp_path: Path) -> None:
    """A stand-in child (a script in place of `docshelf worker`) that echoes each line it
    is sent (a wake-up, the server's uploads starting and ending) as commit news, and
    exits when its stdin closes."""
    script = tmp_path / "child.py"
    script.write_text(
        "import signal, sys\n"
        "signal.signal(signal.SIGTERM, lambda *a: None)  # it ends when its stdin does\n"
        "for line in sys.stdin.buffer:\n"
        "    word = line.decode().strip()\n"
        "    sys.stdout.write('events doc_' + word + '\\n'); sys.stdout.flush()\n"
    )
    published: list[list[str]] = []
    got = threading.Event()

    def publish(ids: Sequence[str]) -> None:
        published.append(list(ids))
        got.set()

    transport = LocalTransport()
    intake = Intake()
    process = WorkerProcess(
        tmp_path,
        1,
        transport=transport,
        publish=publish,
        intake=intake,
        command=[sys.executable, str(script)],
    )
    process.start()
    try:
        assert process.alive
        deadline = time.monotonic() + 10
        while not got.is_set():  # the relay's consumer may not be listening yet
            assert time.monotonic() < deadline, "no news came back"
            transport.notify("doc_x")
            got.wait(0.2)
        assert published[0] == ["doc_wake"]
        with intake.receiving():  # an upload arrives, then is answered
            deadline = time.monotonic() + 10
            while ["doc_busy"] not in published:
                assert time.monotonic() < deadline, "the child was not told of the upload"
                time.sleep(0.02)
        deadline = time.monotonic() + 10
        while ["doc_quiet"] not in published:
            assert time.monotonic() < deadline, "the child was not told the upload ended"
            time.sleep(0.02)
    finally:
        assert process.stop(10)
    assert not process.alive
    assert process.starts == 1  # stopping is not a crash: no restart


# -- the web page, its upload followed to the end by a worker in another process ------------


def test_the_web_page_follows_an_upload_ingested_by_the_worker_process(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    from docshelf.api import create_app
    from tests.live_server import serve

    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")  # the child reads the same environment
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    with Shelf(isolated_home) as shelf:
        _, token = shelf.create_user("alice")
        app = create_app(shelf, workers=1, worker_process=True, worker_nice=0)
        with serve(app) as url:
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(30_000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            sign_in(page, token)
            page.get_by_role("link", name="Upload").click()
            page.evaluate(
                """() => {
                    window.stagesShown = [];
                    new MutationObserver((records) => {
                        for (const r of records) window.stagesShown.push(r.oldValue);
                    }).observe(document.getElementById("uploads"), {
                        subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ["data-stage"],
                    });
                }"""
            )
            page.evaluate(
                """(text) => {
                    const data = new DataTransfer();
                    data.items.add(new File([text], "handbook.md", {type: "text/markdown"}));
                    const zone = document.getElementById("dropzone");
                    zone.dispatchEvent(
                        new DragEvent("drop", {dataTransfer: data, bubbles: true}));
                }""",
                HANDBOOK,
            )
            done = page.locator('.upload[data-stage="complete"]').filter(has_text="handbook.md")
            done.wait_for()
            shown = [*page.evaluate("window.stagesShown"), "complete"]
            context.close()
            process = app.state.pool
            assert isinstance(process, WorkerProcess) and process.alive
        assert not process.alive  # stopped with the app
    assert errors == []
    assert shown[-1] == "complete" and "queued" in shown, shown
