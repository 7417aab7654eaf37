"""Jobs for the parser sandbox's tests, importable by a fresh child (``run_limited(...,
fresh=True)``): this module imports nothing heavier than the sandbox, so a new
interpreter starts it in a fraction of a second (a test module would bring pytest)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from docshelf.model import ParsedDocument
from docshelf.parse.sandbox import Batched, next_phase


def sleepy(data: bytes) -> ParsedDocument:
    time.sleep(30)
    return ParsedDocument(body="", blocks=())


def hog(data: bytes) -> ParsedDocument:
    hoard = [bytearray(16 * 1024 * 1024) for _ in range(64)]  # 1 GiB
    return ParsedDocument(body=str(len(hoard)), blocks=())


def crash(data: bytes) -> ParsedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)
    return ParsedDocument(body="", blocks=())


def stopped(data: bytes) -> ParsedDocument:
    """As if a service manager stopped the process group mid-parse."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
    return ParsedDocument(body="", blocks=())


def quits(data: bytes) -> ParsedDocument:
    os._exit(3)


def buggy(data: bytes) -> ParsedDocument:
    raise ValueError("unexpected " + data.decode())


def two_phases(marked: bytes) -> str:
    """2.5 s, then (if ``marked``) a new phase, then 2.5 s more."""
    time.sleep(2.5)
    if marked == b"yes":
        next_phase()
    time.sleep(2.5)
    return "done"


def parent_and_self(data: bytes) -> tuple[int, int]:
    return os.getppid(), os.getpid()


def tell_and_wait(path: str) -> str:
    """Write this process's pid to ``path``, then outlive any test (until killed)."""
    Path(path).write_text(str(os.getpid()))
    time.sleep(300)
    return "woke"


class Tracked:
    """An item that knows how many of its kind were alive in this process when it was
    made; it travels as that number."""

    live = 0

    def __init__(self) -> None:
        Tracked.live += 1
        self.alive_at_birth = Tracked.live

    def __del__(self) -> None:
        Tracked.live -= 1

    def __reduce__(self) -> tuple[type[int], tuple[int]]:
        return int, (self.alive_at_birth,)


def tracked(count: bytes) -> Batched[str]:
    """``count`` items made one at a time as the sandbox takes them, 100 a batch."""

    def items() -> Iterator[Tracked]:
        for _ in range(int(count)):
            yield Tracked()

    return Batched("head", items(), batch=100)


def pairs(count: bytes) -> Batched[str]:
    return Batched("head", [(i, str(i)) for i in range(int(count))])
