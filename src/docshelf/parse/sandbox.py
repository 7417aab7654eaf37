"""Running a parser in a child process under a time and a memory limit.

One hostile file (a PDF that loops, an HTML page of megabytes of nested tags, a
DOCX that decompresses to gigabytes) must not take down the process that
parses it. :func:`run_limited` runs the parser in a child process started
through multiprocessing's ``forkserver`` (a clean, single-threaded server that
has the parser libraries imported already, so a child costs a fork, not an
interpreter start-up). The child caps its own address space with
``RLIMIT_AS``; the parent waits at most the time limit, then kills it. A
timeout, a ``MemoryError``, a crash or any error the parser did not translate
becomes :class:`~docshelf.errors.InvalidInput`, whose message is the file's
failure reason.

Limits are the caller's (``Settings.parse``), else read from the environment
(``ParseLimits.from_env`` in config.py) on every call:

- ``DOCSHELF_PARSE_TIMEOUT_S`` (default 60): wall-clock seconds per file;
- ``DOCSHELF_PARSE_MEMORY_MB`` (default 1024): address space the parser may
  add on top of the parser process's start-up size.

A function may answer a :class:`Batched` (a head and a long list, e.g. a large
file's chunks): the child sends the head, then the list in batches, so the
parent never unpickles one huge message (a single C call that holds the GIL,
and with it every other thread of a server, for as long as it takes), and with
``on_part`` it can use each batch (write it) and let it go as it arrives.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import spawn
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from typing import Any, Generic, TypeVar

from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput

__all__ = ["DEFAULT_MEMORY_MB", "DEFAULT_TIMEOUT_S", "Batched", "next_phase", "run_limited"]

DEFAULT_TIMEOUT_S = ParseLimits.timeout_s
DEFAULT_MEMORY_MB = ParseLimits.memory_mb

# Imported once in the fork server, so each child starts with them loaded.
_PRELOAD = [
    "docshelf.parse.pdf",
    "docshelf.parse.html",
    "docshelf.parse.docx",
    "docshelf.parse.rst",
    "docshelf.ingest.prepare",  # parse and chunk together (a large file's whole preparation)
]

_PROCESS_NAME = "docshelf-parser"
_Input = TypeVar("_Input", bytes, str)
_Output = TypeVar("_Output")  # a ParsedDocument for parsers; a page image for the reader
_context: ForkServerContext | SpawnContext | None = None
_to_parent: list[Connection] = []  # in the child: its pipe, for next_phase()


@dataclass
class Batched(Generic[_Output]):
    """An answer sent in pieces: ``head`` (small) and ``items`` (long)."""

    head: _Output
    items: list[Any] = field(default_factory=list)
    batch: int = 2_000  # items per message


def run_limited(
    func: Callable[[_Input], _Output],
    data: _Input,
    file_type: str,
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    on_part: Callable[[Any, list[Any]], None] | None = None,
) -> _Output:
    """``func(data)`` in a child process under the limits (from the environment by default).

    ``func`` must be importable by name from a module other than ``__main__``
    (or a ``functools.partial`` of one). Raises InvalidInput naming the limit
    that was exceeded, or the parser's reason. A :class:`Batched` answer comes
    back whole, or with ``on_part`` as ``on_part(head, batch)`` calls while it
    arrives (then its ``items`` are empty); the time limit runs until the head
    has come (the child's work is done then), then again for each batch; a
    child that calls ``next_phase()`` starts it again (parse, then chunk, then
    each further megabyte of a huge block cut: ``ingest.prepare._chunk_in_child``).
    """
    if getattr(func, "__module__", None) == "__main__":
        raise ValueError("run_limited() needs a function importable from a module, not __main__")
    if timeout_s is None or memory_mb is None:
        configured = ParseLimits.from_env()
        timeout_s = configured.timeout_s if timeout_s is None else timeout_s
        memory_mb = configured.memory_mb if memory_mb is None else memory_mb
    timeout, memory = timeout_s, memory_mb
    ctx = _get_context()
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(
        target=_child, args=(sender, func, data, memory), name=_PROCESS_NAME, daemon=True
    )
    try:
        process.start()
        sender.close()
        items: list[Any] = []
        head: Any = None
        status, payload = "head", None
        while status in ("head", "part", "phase"):
            if not receiver.poll(timeout):
                raise InvalidInput(f"{file_type} parser exceeded the {timeout:g} s time limit")
            try:
                status, payload = receiver.recv()
            except (EOFError, OSError):
                process.join(5)
                raise InvalidInput(_died(file_type, process.exitcode, memory)) from None
            if status == "phase":  # the child finished one phase: the limit starts again
                continue
            if status == "head":
                head = payload
            elif status == "part" and on_part is not None:
                on_part(head, payload)
            elif status == "part":
                items.extend(payload)
        if status == "batched":
            payload = Batched(head, items)
            status = "ok"
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        if process.pid is not None:
            process.join(5)
    answer: _Output = _result(file_type, status, payload, memory)
    return answer


def _result(file_type: str, status: str, payload: Any, memory_mb: int) -> Any:
    if status == "ok":
        return payload
    if status == "invalid":
        raise InvalidInput(str(payload))
    if status == "memory":
        raise InvalidInput(f"{file_type} parser exceeded the {memory_mb} MB memory limit")
    raise InvalidInput(f"{file_type} parser failed: {payload}")


def _died(file_type: str, exitcode: int | None, memory_mb: int) -> str:
    """The reason for a child that exited without an answer."""
    if exitcode is not None and exitcode < 0:
        if -exitcode == signal.SIGKILL:  # most likely the kernel's out-of-memory killer
            return f"{file_type} parser was killed (over the {memory_mb} MB memory limit?)"
        return f"{file_type} parser crashed (signal {-exitcode})"
    return f"{file_type} parser exited without a result (exit status {exitcode})"


def _get_context() -> ForkServerContext | SpawnContext:
    global _context
    if _context is None:
        _skip_main_in_children()
        if "forkserver" in multiprocessing.get_all_start_methods():
            server = multiprocessing.get_context("forkserver")
            server.set_forkserver_preload(_PRELOAD)
            _context = server
        else:  # not POSIX: a fresh interpreter per file (slower, same limits)
            _context = multiprocessing.get_context("spawn")
    return _context


def _skip_main_in_children() -> None:
    """Start parser children without re-running the caller's ``__main__`` script.

    multiprocessing re-imports the main script in every spawned or forkserver
    child (so that functions defined there can be found). Parser functions live
    in docshelf's modules, so that import is only cost (tens of milliseconds
    for a script with heavy imports) and a trap (a script without an
    ``if __name__ == "__main__":`` guard would parse again in the child). The
    preparation data of *our* children (by process name) leaves it out.
    """
    original = getattr(spawn, "get_preparation_data", None)
    if original is None or getattr(original, "_docshelf", False):
        return

    def preparation_data(name: str) -> dict[str, Any]:
        data: dict[str, Any] = original(name)
        if name == _PROCESS_NAME:
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    preparation_data._docshelf = True  # type: ignore[attr-defined]
    spawn.get_preparation_data = preparation_data


# -- in the child --------------------------------------------------------------------------


def next_phase() -> None:
    """In the child: one phase of the work is done (a parse, before the chunking), so
    the time limit starts again for the next; elsewhere, nothing."""
    if _to_parent:
        _to_parent[0].send(("phase", None))


def _child(conn: Connection, func: Callable[[Any], Any], data: Any, mb: int) -> None:
    _limit_memory(mb)
    _to_parent[:] = [conn]
    try:
        result = func(data)
        if isinstance(result, Batched):
            conn.send(("head", result.head))
            items, batch = result.items, max(1, result.batch)
            result.items = []
            while items:  # each batch let go once sent: the parent is taking them on
                part = items[:batch]
                del items[:batch]
                conn.send(("part", part))
                del part
                _give_back_memory()
            answer: tuple[str, Any] = ("batched", None)
        else:
            answer = ("ok", result)
    except InvalidInput as exc:
        answer = ("invalid", exc.message)
    except MemoryError:
        answer = ("memory", None)
    except RecursionError:
        answer = ("invalid", "too deeply nested to parse")
    except Exception as exc:
        answer = ("error", f"{type(exc).__name__}: {exc}"[:500])
    try:
        conn.send(answer)
    except MemoryError:
        conn.send(("memory", None))
    finally:
        conn.close()


def _give_back_memory() -> None:
    """Return freed heap to the system (glibc's ``malloc_trim``), so the child's resident
    size falls as its batches leave instead of staying at its peak while the parent's
    grows (a 25 MB file's chunks, held in both at once, were the largest sum)."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):  # not glibc: nothing to do
            _trim = False
    if _trim:
        _trim(0)


_trim: Any = None


def _limit_memory(mb: int) -> None:
    """Cap the address space at what this process maps now plus ``mb`` MB."""
    try:
        import resource
    except ImportError:  # not a POSIX system: only the time limit applies
        return
    limit = _mapped_bytes() + mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _mapped_bytes() -> int:
    """This process's virtual size (0 where /proc is not available)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")
