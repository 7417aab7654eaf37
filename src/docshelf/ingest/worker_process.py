"""``serve``'s ingest workers in a process of their own, beside the server.

A worker in the server's process shares its GIL: the model's forward pass, token
counting and chunking hold it while requests wait (an upload's p95 went from a
few milliseconds to hundreds with the model at work). So ``serve`` starts
``docshelf worker --lifeline`` as a child, on the same library (the store is the
jobs' truth and takes a second writer: SQLite in WAL mode, or the shared
PostgreSQL), and the request path holds nothing but its own work.

The child's stdin and stdout are a small protocol with the server, one line each:

- server → child: ``wake`` when a job was queued here (local wake-ups do not cross
  processes; the child also polls the store, so a lost line costs a poll);
- server → child: ``busy`` when it starts receiving uploads, ``quiet`` when none is
  left, so the child's workers let them pass first (``ingest.uploads.Intake``, as
  in-process workers do): before each stage and embedding batch they wait (≤ 1 s)
  for ``quiet``;
- child → server: ``events <document id> …`` after each commit with events, which
  the server hands to its broadcast, so SSE streams see a worker's progress at once
  (they also read the store every ``DOCSHELF_SSE_POLL_SECONDS``).

Lifetime: stdin is the child's lifeline. The server closing it (``stop``), or
dying in any way (the kernel closes its end, even after SIGKILL), makes the child
stop taking jobs, hand back the one in flight and exit, as on SIGTERM — never an
orphan. A child that dies on its own is started again, with backoff.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from docshelf.backoff import Backoff

if TYPE_CHECKING:
    from docshelf.ingest.uploads import Intake
    from docshelf.store.notices import CommitNotices
    from docshelf.transport import Transport

log = logging.getLogger("docshelf.worker")

WAKE = b"wake\n"
BUSY = b"busy\n"
QUIET = b"quiet\n"
EVENTS = "events"
HEALTHY_SECONDS = 60.0  # a child that ran this long before it died is restarted at once
# The child's CPU priority below the server's (``docshelf worker --nice``): on a busy
# machine the requests' work comes first (what the in-process workers' ``Intake`` does
# within one process); on an idle one the child still has every core.
NICE = 10


class WorkerProcess:
    """``count`` ingest workers in one child process (``docshelf worker --lifeline``).

    ``transport``: the server's job wake-ups; when it is the in-process one, its
    wake-ups are relayed to the child. ``publish``: where the child's commit news
    goes (the server's ``Broadcast.publish``)."""

    def __init__(
        self,
        home: Path,
        count: int,
        *,
        transport: Transport,
        publish: Callable[[Sequence[str]], None],
        intake: Intake | None = None,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        nice: int = NICE,
    ) -> None:
        self.home = home
        self.count = count
        self.transport = transport
        self.publish = publish
        self.intake = intake
        self.env = None if env is None else dict(env)  # None: this process's environment
        self.command = list(command or [sys.executable, "-m", "docshelf.cli"])
        self.nice = nice
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0  # how many children were started (a restart adds one)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._restarts = Backoff(base=1.0, cap=60.0, logger=log, what="the worker process")

    # -- the server's side -----------------------------------------------------------
    def start(self) -> None:
        self._spawn()
        self._thread(self._supervise, "worker-process-supervisor")
        if getattr(self.transport, "url", "") == "local":
            self._thread(self._relay_wakeups, "worker-process-wakeups")
        if self.intake is not None:
            self._thread(self._relay_intake, "worker-process-intake")

    def stop(self, timeout: float = 30.0) -> bool:
        """Close the lifeline and wait ``timeout`` s for the child's drain; SIGTERM it
        if it is still there, then kill it. True when it exited by itself with status 0.

        The closed lifeline alone stops the child (as SIGTERM would). A SIGTERM sent at
        once could land while the child's interpreter is already finishing, after
        Python put back the signal's default action, and kill a child that was
        exiting cleanly."""
        self._stopping.set()
        with self._lock:
            proc = self.process
        clean = True
        if proc is not None:
            _close(proc.stdin)
            try:
                clean = proc.wait(timeout) == 0
            except subprocess.TimeoutExpired:
                clean = False
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(2)
                except subprocess.TimeoutExpired:
                    log.warning("the worker process did not drain in %.0f s; killed", timeout)
                    proc.kill()
                    proc.wait()
        for t in self._threads:
            t.join(5)
        return clean

    @property
    def alive(self) -> bool:
        with self._lock:
            return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        with self._lock:
            return None if self.process is None else self.process.pid

    def _spawn(self) -> None:
        cmd = [
            *self.command,
            "--home",
            str(self.home),
            "worker",
            "--count",
            str(self.count),
            "--nice",
            str(self.nice),
            "--lifeline",
        ]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            close_fds=True,
            process_group=0,  # Ctrl-C in a terminal reaches the server, which stops the child
        )
        with self._lock:
            self.process = proc
            self.starts += 1
        self._thread(lambda: self._relay_events(proc), "worker-process-events")

    def _thread(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _supervise(self) -> None:
        """Start the child again when it ends on its own (backoff between starts)."""
        while not self._stopping.is_set():
            with self._lock:
                proc = self.process
            assert proc is not None
            started = time.monotonic()
            code = proc.wait()
            if self._stopping.is_set():
                return
            _close(proc.stdin)
            if time.monotonic() - started > HEALTHY_SECONDS:
                self._restarts.succeeded()  # it ran a good while: not a crash loop
            delay = self._restarts.failed(f"it exited with status {code}")
            if self._stopping.wait(delay):
                return
            self._spawn()

    def _relay_wakeups(self) -> None:
        consumer = self.transport.consumer()
        try:
            while not self._stopping.is_set():
                if consumer.wait(1.0):
                    self._send(WAKE)
        finally:
            consumer.close()

    def _relay_intake(self) -> None:
        """``busy`` when this server starts receiving uploads, ``quiet`` when it is done."""
        intake = self.intake
        assert intake is not None
        while not self._stopping.is_set():
            if not intake.wait_busy(1.0):
                continue
            self._send(BUSY)
            while not intake.quiet(1.0):
                if self._stopping.is_set():
                    return
            self._send(QUIET)

    def _send(self, line: bytes) -> None:
        with self._lock:
            proc = self.process
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the child is gone; the supervisor starts another, which polls the store

    def _relay_events(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdout is None:
            return
        for raw in proc.stdout:
            words = raw.decode("ascii", "replace").split()
            if len(words) > 1 and words[0] == EVENTS:
                try:
                    self.publish(words[1:])
                except Exception:
                    log.warning("could not announce the worker's events", exc_info=True)


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


# -- the child's side ----------------------------------------------------------------------


def lifeline(
    stop: threading.Event,
    transport: Transport,
    notices: CommitNotices,
    intake: Intake | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> None:
    """In ``docshelf worker --lifeline``: wake-ups from stdin go to ``transport`` and the
    server's uploads to ``intake``; EOF on stdin (the server stopped or died) sets
    ``stop``; each commit's documents are written to stdout for the server's broadcast
    (after the listener already there)."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    write_lock = threading.Lock()
    before = notices.listener

    def tell(document_ids: Sequence[str]) -> None:
        if before is not None:
            before(document_ids)
        line = " ".join([EVENTS, *document_ids]).encode("ascii", "replace") + b"\n"
        with write_lock:
            try:
                sink.write(line)
                sink.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the server is gone; the lifeline's EOF stops us

    notices.listener = tell

    def read() -> None:
        try:
            for line in source:
                if line == WAKE:
                    transport.notify("")
                elif line in (BUSY, QUIET) and intake is not None:
                    intake.set_remote(line == BUSY)
        except (OSError, ValueError):
            pass
        if intake is not None:
            intake.set_remote(False)
        stop.set()  # EOF: the server closed the lifeline, or died
        transport.notify("")  # idle workers wake and see the stop

    threading.Thread(target=read, name="lifeline", daemon=True).start()
