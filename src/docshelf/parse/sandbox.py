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
failure reason (:class:`~docshelf.errors.OverLimit` for a limit reached, the child
killed or stopped, or gone without an answer: not the bytes' doing, so another try may
read them; ``failures.decided_by`` judges the reasons).

Limits are the caller's (``Settings.parse``), else read from the environment
(``ParseLimits.from_env`` in config.py) on every call:

- ``DOCSHELF_PARSE_TIMEOUT_S`` (default 60): wall-clock seconds per file;
- ``DOCSHELF_PARSE_MEMORY_MB`` (default 1024): address space the parser may
  add on top of the parser process's start-up size.

A function may answer a :class:`Batched` (a head and a long sequence, e.g. a large
file's chunks, which may be an iterator that makes them as it goes): the child sends
the head, then the items in bounded batches as it takes them, so the parent never
unpickles one huge message (a single C call that holds the GIL, and with it every
other thread of a server, for as long as it takes), and with ``on_part`` it can use
each batch (write it) and let it go as it arrives; the child never holds more than
one batch of them either.

With ``fresh=True`` the child is a new interpreter (``python -c``, talking over two
pipes) instead of a fork server's child: the same limits and reasons, without the
fork server and multiprocessing's resource tracker, two more processes that would
stay for the caller's lifetime (about 40 and 12 MB; a server's tree counts them).
A new interpreter costs a start-up (0.2 to 0.8 s), so it is for large files (the
preparation of a file over ``parse.IN_PROCESS_BYTES``: parse and chunk), where the
work takes seconds anyway; each small PDF or HTML file still costs only a fork.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing import spawn
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from typing import Any, Generic, Protocol, TypeVar

from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput, OverLimit

__all__ = ["DEFAULT_MEMORY_MB", "DEFAULT_TIMEOUT_S", "Batched", "next_phase", "run_limited"]

DEFAULT_TIMEOUT_S = ParseLimits.timeout_s
DEFAULT_MEMORY_MB = ParseLimits.memory_mb

# Imported once in the fork server, so each child starts with them loaded.
_PRELOAD = [
    "docshelf.parse.pdf",
    "docshelf.parse.html",
    "docshelf.parse.docx",
    "docshelf.parse.rst",
]

_PROCESS_NAME = "docshelf-parser"
_Input = TypeVar("_Input", bytes, str)
_Output = TypeVar("_Output")  # a ParsedDocument for parsers; a page image for the reader
_context: ForkServerContext | SpawnContext | None = None
_to_parent: list[Connection] = []  # in the child: its pipe, for next_phase()


@dataclass
class Batched(Generic[_Output]):
    """An answer sent in pieces: ``head`` (small) and ``items`` (long).

    In the child ``items`` may be any iterable (taken one batch at a time); in the
    parent it is the list of what arrived. A batch is ``batch`` items, or fewer once
    the sum of ``weigh(item)`` reaches ``max_weight`` (e.g. characters of text)."""

    head: _Output
    items: Iterable[Any] = field(default_factory=list)
    batch: int = 2_000  # items per message
    weigh: Callable[[Any], int] | None = None
    max_weight: int = 0


def run_limited(
    func: Callable[[_Input], _Output],
    data: _Input,
    file_type: str,
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    on_part: Callable[[Any, list[Any]], None] | None = None,
    fresh: bool = False,
    preload: Sequence[str] = (),
) -> _Output:
    """``func(data)`` in a child process under the limits (from the environment by default).

    ``func`` must be importable by name from a module other than ``__main__``
    (or a ``functools.partial`` of one). Raises InvalidInput naming the limit
    that was exceeded, or the parser's reason. A :class:`Batched` answer comes
    back whole, or with ``on_part`` as ``on_part(head, batch)`` calls while it
    arrives (then its ``items`` are empty); the time limit runs until the head
    has come, then again for each batch; a child that calls ``next_phase()``
    starts it again (parse, then chunk, then each further megabyte of a huge block
    cut: ``ingest.prepare._chunk_in_child``). ``fresh``: in a new interpreter, which
    imports ``preload`` first (see the module's docstring), not a fork server's child.
    """
    if getattr(func, "__module__", None) == "__main__":
        raise ValueError("run_limited() needs a function importable from a module, not __main__")
    if timeout_s is None or memory_mb is None:
        configured = ParseLimits.from_env()
        timeout_s = configured.timeout_s if timeout_s is None else timeout_s
        memory_mb = configured.memory_mb if memory_mb is None else memory_mb
    timeout, memory = timeout_s, memory_mb
    if fresh and os.name == "posix":
        child: _Child = _FreshChild(func, data, memory, preload)
    else:
        child = _ForkedChild(func, data, memory)
    receiver = child.answers
    try:
        items: list[Any] = []
        head: Any = None
        status, payload = "head", None
        while status in ("head", "part", "phase"):
            if not receiver.poll(timeout):
                raise OverLimit(f"{file_type} parser exceeded the {timeout:g} s time limit")
            try:
                status, payload = receiver.recv()
            except (EOFError, OSError):
                child.join(5)
                raise _died(file_type, child.exitcode, memory) from None
            if status == "phase":  # the child finished one phase: the limit starts again
                continue
            if status == "head":
                head = payload
            elif status == "part":
                if on_part is not None:
                    on_part(head, payload)
                else:
                    items.extend(payload)
                payload = None  # a batch used is let go before the next arrives
        if status == "batched":
            payload = Batched(head, items)
            status = "ok"
    finally:
        receiver.close()
        child.stop()
    answer: _Output = _result(file_type, status, payload, memory)
    return answer


class _Child(Protocol):
    """A running child, as ``run_limited`` sees it."""

    answers: Connection  # what the child sends

    @property
    def exitcode(self) -> int | None: ...  # negative: the signal that ended it

    def join(self, timeout: float) -> None: ...

    def stop(self) -> None:  # killed if still running, and waited for
        ...


class _ForkedChild:
    """A child of multiprocessing's fork server (``spawn`` where there is none)."""

    def __init__(self, func: Callable[[Any], Any], data: Any, memory_mb: int) -> None:
        ctx = _get_context()
        self.answers, sender = ctx.Pipe(duplex=False)
        # the data in a list, which the child empties: the parser's frame holds the
        # only reference, so a parser can let go of its input once it has read it
        self.process = ctx.Process(
            target=_child, args=(sender, func, [data], memory_mb), name=_PROCESS_NAME, daemon=True
        )
        try:
            self.process.start()
        finally:
            sender.close()

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def join(self, timeout: float) -> None:
        self.process.join(timeout)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        if self.process.pid is not None:
            self.process.join(5)


# What a fresh child runs: its pipes' file descriptors, its parent's pid and its parent's
# sys.path follow (so it finds docshelf, and the job's function, where the parent does).
_FRESH_MAIN = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[4]); "
    "from docshelf.parse.sandbox import _fresh_main; _fresh_main()"
)


class _FreshChild:
    """A new interpreter (``python -c``) as the child, with a pipe each way."""

    def __init__(
        self, func: Callable[[Any], Any], data: Any, memory_mb: int, preload: Sequence[str]
    ) -> None:
        # pickled here, so a function that cannot be sent fails in the caller, as it would
        # with multiprocessing; bytes go as they are (not pickled: no second copy)
        job = _dumps((func, memory_mb, isinstance(data, bytes)))
        job_read, job_write = os.pipe()
        answer_read, answer_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _FRESH_MAIN,
                    str(job_read),
                    str(answer_write),
                    str(os.getpid()),
                    json.dumps(sys.path),
                ],
                stdin=subprocess.DEVNULL,
                pass_fds=(job_read, answer_write),
            )
        except BaseException:
            os.close(job_write)
            os.close(answer_read)
            raise
        finally:
            os.close(job_read)
            os.close(answer_write)
        self.answers = Connection(answer_read, writable=False)
        jobs = Connection(job_write, readable=False)
        # sent by a thread: a child that never reads (it died starting) must not block
        # the caller past the time limit; its end closing breaks the pipe, ending this
        self._sender = threading.Thread(
            target=_send_job,
            args=(jobs, list(preload), job, data),
            name="docshelf-parser-job",
            daemon=True,
        )
        self._sender.start()

    @property
    def exitcode(self) -> int | None:
        return self.process.poll()

    def join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.join(5)
        self._sender.join(5)


def _dumps(obj: Any) -> bytes:
    from multiprocessing.reduction import ForkingPickler

    return bytes(ForkingPickler.dumps(obj))


def _send_job(jobs: Connection, preload: list[str], job: bytes, data: Any) -> None:
    try:
        jobs.send(preload)
        jobs.send_bytes(job)
        if isinstance(data, bytes):
            jobs.send_bytes(data)
        else:
            jobs.send(data)
    except OSError:  # the child is gone: run_limited reports why
        pass
    finally:
        jobs.close()


def _result(file_type: str, status: str, payload: Any, memory_mb: int) -> Any:
    if status == "ok":
        return payload
    if status == "invalid":
        raise InvalidInput(str(payload))
    if status == "memory":
        raise OverLimit(f"{file_type} parser exceeded the {memory_mb} MB memory limit")
    raise InvalidInput(f"{file_type} parser failed: {payload}")


# Signals sent from outside (a person's Ctrl-C, a service manager stopping the process
# group): the parser was stopped, not crashed on its input.
_STOPPED = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})


def _died(file_type: str, exitcode: int | None, memory_mb: int) -> InvalidInput:
    """The error of a child that exited without an answer: killed (a limit reached) or
    stopped from outside, or gone without a word (it did not start, say) — another try
    may pass (``OverLimit``, ``failures.decided_by``) — or crashed on its input by a
    signal of its own (SIGSEGV, SIGABRT, …): the bytes'."""
    if exitcode is not None and exitcode < 0:
        if -exitcode == signal.SIGKILL:  # most likely the kernel's out-of-memory killer
            return OverLimit(
                f"{file_type} parser was killed (over the {memory_mb} MB memory limit?)"
            )
        if -exitcode in _STOPPED:
            return OverLimit(f"{file_type} parser was stopped (signal {-exitcode})")
        return InvalidInput(f"{file_type} parser crashed (signal {-exitcode})")
    return OverLimit(f"{file_type} parser exited without a result (exit status {exitcode})")


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


def _child(conn: Connection, func: Callable[[Any], Any], data: list[Any], mb: int) -> None:
    """The work, under the memory limit, and its answer. ``data``: a list of one item,
    taken out of it, so that the parser's argument is the input's only reference."""
    _limit_memory(mb)
    _to_parent[:] = [conn]
    try:
        result = func(data.pop())
        if isinstance(result, Batched):
            _send_batched(conn, result)
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


def _send_batched(conn: Connection, result: Batched[Any]) -> None:
    """The head, then the items in batches, each taken from ``items`` (an iterator is
    not run ahead) and let go once sent: the child holds one batch at most."""
    conn.send(("head", result.head))
    items, result.items = iter(result.items), []
    size, weigh, most = max(1, result.batch), result.weigh, result.max_weight
    part: list[Any] = []
    weight = 0
    for item in items:
        part.append(item)
        if weigh is not None:
            weight += weigh(item)
        if len(part) >= size or (most and weight >= most):
            conn.send(("part", part))
            part, weight = [], 0
            _give_back_memory()
    if part:
        conn.send(("part", part))


def _fresh_main() -> None:
    """A fresh child (``_FRESH_MAIN``): its job from the pipe, then ``_child``'s work."""
    job_fd, answer_fd, parent = (int(arg) for arg in sys.argv[1:4])
    _die_with(parent)
    answers = Connection(answer_fd, readable=False)
    jobs = Connection(job_fd, writable=False)
    try:
        preload = jobs.recv()
        for name in preload:  # what a fork server would have had imported already
            importlib.import_module(name)
        func, mb, raw = jobs.recv()
        data = [jobs.recv_bytes() if raw else jobs.recv()]
    except EOFError:  # the parent went away before the job was sent
        os._exit(1)
    except BaseException as exc:  # e.g. the function's module cannot be imported here
        answers.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
        answers.close()
        return
    finally:
        jobs.close()
    _child(answers, func, data, mb)


def _die_with(parent: int) -> None:
    """End with the parent (Linux: ``PR_SET_PDEATHSIG``): a fresh child is not a fork
    server's, whose server ends with the caller; once the caller is gone no one would
    enforce the time limit."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pipe's end still ends it, once sent
        pass
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


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
