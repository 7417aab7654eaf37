"""What the tests' real servers (SeaweedFS, Chroma, …) share: free loopback ports, a
child that dies with the test process, the tail of its log, and a stop that kills its
whole process group."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

STARTUP_SECONDS = 60  # a loaded machine; each server is ready in a second or two


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held together while chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# prctl looked up here, in the test process: the child, between fork and exec, only calls it
# (an import there could wait forever on a lock another thread of the test process held)
_PRCTL = ctypes.CDLL(None).prctl if sys.platform == "linux" else None


def die_with_parent() -> None:
    """In the child, before exec: on Linux the kernel kills it when the test process
    dies without running its teardown (a SIGKILL), so no server outlives the run."""
    if _PRCTL is not None:
        PR_SET_PDEATHSIG = 1
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def wait_for(condition: Callable[[], object], what: str, seconds: float = 60.0) -> None:
    """Until ``condition()`` holds, polled; an AssertionError naming ``what`` after
    ``seconds`` (bounded: a test never waits forever, nor asserts on a time)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: reaped here when it is a child of this process,
    else no longer there or a zombie waiting for its parent."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # ours when started from this process
        if done:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return True
    return state in ("Z", "X")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the whole process group (its graceful stop can take many seconds, and the
    data is thrown away anyway)."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextmanager
def http_server(
    name: str,
    command: Sequence[str],
    root: Path,
    ready_url: str,
    ready: Callable[[bytes], bool],
    env: dict[str, str] | None = None,
) -> Iterator[None]:
    """Run ``command`` in ``root`` (its own process group, dying with this process, its
    output in ``root/<name>.log``) until the block ends, once ``ready_url`` answers a body
    ``ready`` accepts; then kill it and remove ``root``."""
    log = root / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(command),
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env if env is not None else dict(os.environ),
            preexec_fn=die_with_parent,
        )
    try:
        _wait_ready(name, ready_url, ready, proc, log)
        yield
    finally:
        stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(
    name: str,
    url: str,
    ready: Callable[[bytes], bool],
    proc: subprocess.Popen[bytes],
    log: Path,
) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    last: object = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                last = body = answer.read()
                if answer.status == 200 and ready(body):
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    stop(proc)
    raise AssertionError(
        f"{name} was not ready in {STARTUP_SECONDS} s ({last!r}):\n{log_tail(log)}"
    )
