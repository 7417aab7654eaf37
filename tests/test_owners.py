"""A lease's owner (owners.py, issue 41): this process is alive; a process that has
ended, or a pid taken again by another process, is dead; an owner of another host (or
one that does not read as a token) is not known to be dead, so its lease runs out by
time."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time

import psutil

from docshelf import owners

_PRINT_TOKEN = "from docshelf import owners; print(owners.this_process(), flush=True)"


def dead_token() -> str:
    """The token of a child process of this host that has ended (and been reaped)."""
    out = subprocess.run(
        [sys.executable, "-c", _PRINT_TOKEN], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def _mine() -> owners.Owner:
    owner = owners.parse(owners.this_process())
    assert owner is not None
    return owner


def test_this_process_is_alive() -> None:
    token = owners.this_process()
    assert token == owners.this_process()  # the same each time
    mine = _mine()
    assert (mine.pid, mine.host) == (os.getpid(), socket.gethostname())
    assert not owners.gone(token)
    assert not owners.gone(f"{token}:a1b2c3")  # a worker's name starts with its token


def test_an_ended_process_is_dead() -> None:
    token = dead_token()
    child = owners.parse(token)
    assert child is not None and child.pid != os.getpid()
    assert (child.host, child.scope) == (_mine().host, _mine().scope)
    assert owners.gone(token)
    assert owners.gone(f"{token}:a1b2c3")


def test_a_killed_child_not_yet_reaped_is_dead() -> None:
    """A zombie holds nothing, though its pid is still there."""
    code = f"{_PRINT_TOKEN}; import time; time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        token = proc.stdout.readline().strip()
        assert not owners.gone(token)  # running
        os.kill(proc.pid, signal.SIGKILL)
        while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        assert owners.gone(token)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_this_pid_with_another_start_is_dead() -> None:
    """The pid was taken again: the process that held the lease started at another time."""
    mine = _mine()
    earlier = dataclasses.replace(mine, started=mine.started - 5 * owners.START_SLACK)
    assert owners.gone(str(earlier))
    near = dataclasses.replace(mine, started=mine.started + owners.START_SLACK / 2)
    assert not owners.gone(str(near))  # within the slack of two reads of one start


def test_an_owner_elsewhere_is_not_known_dead() -> None:
    gone = owners.parse(dead_token())
    assert gone is not None
    # another host's process, or another pid space's (a container; an earlier boot):
    # its pid means nothing here, so its lease runs out by time
    assert not owners.gone(str(dataclasses.replace(gone, host=gone.host + "-other")))
    assert not owners.gone(str(dataclasses.replace(gone, scope="00000000")))
    # not tokens: a lease from before owners were kept, a worker named by hand
    for token in ("", "w1", "host:1234:abc123", f"{gone.host}:x:1.0:{gone.scope}"):
        assert owners.parse(token) is None
        assert not owners.gone(token)
