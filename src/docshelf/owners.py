"""Who holds a lease: a token naming this process, and whether the process a token
names has died, so that its leases need not wait out their time (issue 41).

A token reads ``host:pid:started:scope``: the host name; the pid; when the process
started, in seconds after the machine booted (psutil's start time less its boot time,
which a step of the clock does not move); and the pid space it belongs to, as 8 hex
digits (on Linux the boot and the pid namespace: containers may share a host name, and
do not share pids). Anything may follow the four fields: a worker adds its own name.

``gone`` says True only when it is sure: the token is of this pid space, and no process
has its pid, or the one that has it is a zombie or started at another time (the pid was
taken again). A token of another host or pid space, or one that does not read as a
token (a lease taken before owners were recorded, a worker given a name of its own), is
not known to be dead: such a lease runs out by time.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

# Two reads of one process's start agree to the clock tick on Linux; elsewhere the boot
# time they are taken from may move a little. A pid is not taken again within a second.
START_SLACK = 1.0


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    started: float  # seconds after the machine booted
    scope: str  # the pid space: the boot and the pid namespace, hashed

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.started:.2f}:{self.scope}"


def this_process() -> str:
    """This process's token (a child made by ``fork`` has its own)."""
    return str(_owner(os.getpid()))


def gone(token: str) -> bool:
    """True when ``token`` names a process of this host's pid space that has died."""
    owner = parse(token)
    if owner is None or (owner.host, owner.scope) != (_host(), _scope()):
        return False  # not ours to judge: its lease runs out by time
    if str(owner) == this_process():
        return False
    return not _alive(owner.pid, owner.started)


def parse(token: str) -> Owner | None:
    """The owner a token names; None when it does not read as one."""
    parts = token.split(":")
    if len(parts) < 4:
        return None
    host, pid, started, scope = parts[:4]
    try:
        return Owner(host, int(pid), float(started), scope)
    except ValueError:
        return None


@functools.cache
def _owner(pid: int) -> Owner:
    import psutil

    started = _since_boot(psutil.Process(pid))
    return Owner(_host(), pid, round(started, 2), _scope())


def _alive(pid: int, started: float) -> bool:
    """Process ``pid`` is there and started at ``started`` (a zombie holds nothing; one
    we may not look at is alive as far as we know)."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(_since_boot(process) - started) <= START_SLACK
    except psutil.NoSuchProcess:  # a zombie too, where its start cannot be read
        return False
    except psutil.AccessDenied:
        return True


def _since_boot(process: psutil.Process) -> float:
    """When ``process`` started, in seconds after the machine booted."""
    import psutil

    return float(process.create_time() - psutil.boot_time())


def _host() -> str:
    import socket  # here: an unchanged sync imports no more than it needs (test_cli)

    return socket.gethostname()


@functools.cache
def _scope() -> str:
    """This host's pid space: the boot (Linux's boot id, or the boot time) and, on Linux,
    the pid namespace, hashed to 8 hex digits."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        import psutil

        boot = str(int(psutil.boot_time()))
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return hashlib.sha256(f"{boot}|{namespace}".encode()).hexdigest()[:8]
