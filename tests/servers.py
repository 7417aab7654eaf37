"""What the tests' real servers (SeaweedFS, Chroma, …) share: free loopback ports, a
child that dies with the test process, the tail of its log, and a stop that kills its
whole process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from contextlib import suppress
from pathlib import Path


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


def die_with_parent() -> None:
    """In the child, before exec: on Linux the kernel kills it when the test process
    dies without running its teardown (a SIGKILL), so no server outlives the run."""
    if sys.platform == "linux":
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the whole process group (its graceful stop can take many seconds, and the
    data is thrown away anyway)."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
