"""The search helper: one resident process per library that answers ``docshelf search``
over a Unix socket in the library's home, so a search from a terminal or an agent pays
a small client's start-up instead of opening the library and the model every time.

``docshelf search`` first asks the helper (:func:`ask`); when none answers — absent,
refused, or not trusted — it searches in-process as before, and with
``DOCSHELF_SEARCH_HELPER=auto`` (the default) starts one for the next search
(:func:`start`). The helper (``python -m docshelf.cli.resident HOME``) exits after
``DOCSHELF_SEARCH_HELPER_IDLE`` seconds without a search, when its socket is taken
over or removed, and when the library's database is replaced; one per library (a lock
in the home). docs/benchmarks/search-new-process.md, "A search as a new process: the search
helper", has the figures.

The wire: one JSON line each way. The reply's ``result`` is ``views.search`` of the
helper's own ``Shelf.search``, so the envelope the CLI prints is the in-process one.
What keeps a helper from answering what it should not:

- **Only its owner's library.** The socket is created 0600 in the home (0700); the
  client connects only to a socket owned by its own user, in a home owned by its
  user, and checks the helper's user on the connection (``SO_PEERCRED``); the helper
  answers only a peer of its own user.
- **Only this library, as configured now.** The request names the home, the
  database file (device and inode), a digest of the settings and a stamp of the code;
  the helper refuses any difference (a replaced library, other settings, upgraded
  code), and the client then searches in-process.
- **Never a stale generation.** The client reads the store's generation before it
  asks; the helper reports the generation its search read (the same before and after
  it); a reply at an older generation is refused. The model the library is bound to
  is checked on every search: a reindex to another model stops the helper.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from docshelf.config import Settings
    from docshelf.search.results import SearchResult
    from docshelf.shelf import Shelf

PROTOCOL = 1
SOCKET = "search.sock"
LOCK = "search.lock"
LOG = "search-helper.log"
POLICIES = ("auto", "use", "off")  # DOCSHELF_SEARCH_HELPER
MAX_LINE = 4 * 2**20  # a request or a reply larger than this is refused
CONNECT_TIMEOUT = 1.0  # seconds to reach a helper before searching in-process
REPLY_TIMEOUT = 30.0  # seconds for its answer (a first search may load the model)
REQUEST_TIMEOUT = 5.0  # seconds the helper waits for a request once connected
SUPPORTED = hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")  # Linux


class SearchRequest(NamedTuple):  # not a dataclass: a helped search needs no dataclass
    """The arguments of ``docshelf search``, as the command received them (and as the
    helper is asked them, on the wire)."""

    query: str
    limit: int
    mode: str
    filters: list[str]
    group: str
    expand: str | None
    notebook: str | None = None  # a notebook's id or name: search within it


class Reply(NamedTuple):
    """An answer from a helper: the result, or why there is none."""

    result: dict[str, Any] | None
    refused: str | None = None  # the reason, when the helper did not (or may not) answer


# -- what both sides compute ------------------------------------------------------------


def code_stamp() -> str:
    """The installed docshelf code, cheaply: each module's path, size and mtime."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:32]


def settings_digest(settings: Settings) -> str:
    """Every setting that may shape a search (all of them: a difference only costs an
    in-process search), but the helper's own."""
    import dataclasses

    shaping = dataclasses.replace(settings, search_helper="auto", search_helper_idle=0.0)
    return hashlib.sha256(repr(shaping).encode()).hexdigest()[:32]


def database_file(settings: Settings) -> Path | None:
    """The SQLite file of an embedded library; None for a server store (no helper)."""
    url = settings.database_url
    if not url.startswith("sqlite:///"):
        return None
    return Path(url.removeprefix("sqlite:///"))


def file_identity(path: Path) -> list[int]:
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def read_generation(db: Path) -> int:
    """The store's generation, read-only, without opening the library."""
    import sqlite3

    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    finally:
        conn.close()
    return int(row[0]) if row else 0


def peer_uid(conn: socket.socket) -> int:
    """The user of the process at the other end of a Unix socket (Linux ``SO_PEERCRED``)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


class _Address:
    """A socket path usable at any length: past the 107 bytes ``sun_path`` holds, the
    home is reached through an open descriptor (``/proc/self/fd/N``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> str:
        if len(os.fsencode(str(self.path))) < 100:
            return str(self.path)
        self._fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        return f"/proc/self/fd/{self._fd}/{self.path.name}"

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)


def _read_line(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        data = conn.recv(65536)
        if not data:
            break
        chunks.append(data)
        size += len(data)
        if data.endswith(b"\n") or size > MAX_LINE:
            break
    line = b"".join(chunks)
    if size > MAX_LINE or not line.endswith(b"\n"):
        raise ValueError("incomplete or oversized message")
    return line


def searched(shelf: Shelf, request: SearchRequest) -> SearchResult:
    """``request`` searched in ``shelf``: the helper's search and the in-process one
    (``quick.py``). Without ``--filter`` options the filters are the empty ones
    ``Filters`` would give, without loading pydantic for its model."""
    from docshelf.store import SearchFilters

    filters = SearchFilters()
    if request.filters:
        from docshelf.search.filters_model import Filters

        filters = Filters.parse(request.filters).to_search_filters(shelf.taxonomy)
    return shelf.search(
        request.query,
        limit=request.limit,
        mode=request.mode,
        filters=filters,
        group=request.group,
        expand=request.expand,
        notebook=request.notebook,
    )


# -- the client -------------------------------------------------------------------------


def policy(settings: Settings) -> str:
    """The helper policy: off when the library's vector engine is one a single process
    may open (the helper would hold it from every other command)."""
    from docshelf.config import one_process_engine

    return "off" if one_process_engine(settings) else settings.search_helper


def trusted_socket(home: Path) -> tuple[Path | None, str]:
    """The helper's socket when it may be used — a socket owned by this user, readable
    by no one else, in a home owned by this user — or None and why not (``absent``:
    no helper has made one)."""
    path = home / SOCKET
    uid = os.geteuid()
    try:
        st = os.lstat(path)
        home_st = os.stat(home)
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, f"not usable: {exc.strerror}"
    if not stat.S_ISSOCK(st.st_mode):
        return None, "not trusted: not a socket"
    if st.st_uid != uid or home_st.st_uid != uid:
        return None, "not trusted: owned by another user"
    if st.st_mode & 0o077:
        return None, "not trusted: open to other users"
    return path, "ok"


def ask(settings: Settings, request: SearchRequest) -> Reply:
    """The helper's answer to ``request``, or ``Reply(None, reason)`` when it cannot be
    had or trusted (then the caller searches in-process)."""
    db = database_file(settings)
    if db is None:
        return Reply(None, "not an embedded library")
    if not SUPPORTED:
        return Reply(None, "no helper on this system")
    path, why = trusted_socket(settings.home)
    if path is None:
        return Reply(None, why)
    try:
        identity = file_identity(db)
        generation = read_generation(db)
    except (OSError, ValueError, ImportError) as exc:
        return Reply(None, f"library unreadable: {exc}")
    except Exception as exc:  # sqlite3.Error: the in-process search will say what
        return Reply(None, f"library unreadable: {exc}")
    message = {
        "protocol": PROTOCOL,
        "code": code_stamp(),
        "home": str(settings.home),
        "database": identity,
        "settings": settings_digest(settings),
        "search": request._asdict(),
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn, _Address(path) as addr:
            conn.settimeout(CONNECT_TIMEOUT)
            conn.connect(addr)
            if peer_uid(conn) != os.geteuid():
                return Reply(None, "the helper runs as another user")
            conn.settimeout(REPLY_TIMEOUT)
            conn.sendall(json.dumps(message).encode() + b"\n")
            reply = json.loads(_read_line(conn))
    except (OSError, ValueError) as exc:
        return Reply(None, f"no answer: {exc}")
    if not isinstance(reply, dict) or not reply.get("ok"):
        reason = reply.get("reason") if isinstance(reply, dict) else None
        return Reply(None, f"refused: {reason or 'no reason'}")
    if not isinstance(reply.get("generation"), int) or reply["generation"] < generation:
        return Reply(None, "refused: the helper answered from an older generation")
    result = reply.get("result")
    if not isinstance(result, dict):
        return Reply(None, "refused: no result")
    return Reply(result)


def start(settings: Settings) -> None:
    """Start a helper for this library in the background (it exits at once when another
    holds the library's lock). Its own session: it outlives this command, never its
    idle time; its output goes to the home's ``search-helper.log``."""
    with contextlib.suppress(OSError):  # no helper: searches stay in-process
        detached("docshelf.cli.resident", settings.home, LOG)


def detached(module: str, home: Path, log: str) -> int:
    """``python -m module HOME`` in a session of its own (it outlives this command), its
    output appended to ``log`` in the home; its pid."""
    import subprocess

    from docshelf.durable import private_file

    path = home / log
    private_file(path)
    with open(path, "ab") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", module, str(home)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    return child.pid


# -- the helper -------------------------------------------------------------------------


class Helper:
    """The resident side: one open ``Shelf`` answering search requests on the socket."""

    def __init__(self, shelf: Shelf, idle_seconds: float, *, poll: float = 1.0) -> None:
        settings = shelf.settings
        self.shelf = shelf
        self.home = settings.home
        self.idle_seconds = idle_seconds
        self.poll = poll
        self.uid = os.geteuid()
        db = database_file(settings)
        if db is None:
            raise ValueError("the search helper serves embedded (SQLite) libraries only")
        self.db = db
        # Held open, so that no other file can take the database's inode number while
        # this helper lives: (device, inode) then names this library and no other.
        self._db_fd: int | None = os.open(db, os.O_RDONLY)
        st = os.fstat(self._db_fd)
        self.expect = {
            "protocol": PROTOCOL,
            "code": code_stamp(),
            "home": str(self.home),
            "database": [st.st_dev, st.st_ino],
            "settings": settings_digest(settings),
        }
        self.model = shelf.bound_model()
        self.path = self.home / SOCKET
        self._sock: socket.socket | None = None
        self._ino: int | None = None
        self._stop = False

    def stop(self) -> None:
        """Leave ``serve`` at its next poll."""
        self._stop = True

    def warm(self) -> None:
        """Load what the first search would: the query model (in its form for many
        queries), the sidecar indexes (``Service.warm``)."""
        self.shelf.service.warm()

    def bind(self) -> None:
        """Listen on the home's socket: made 0600 under a temporary name, then renamed
        over any leftover of a dead helper (the lock says none is alive)."""
        tmp = self.home / f".{SOCKET}.{os.getpid()}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with _Address(tmp) as addr:
                sock.bind(addr)
        finally:
            os.umask(old)
        os.chmod(tmp, 0o600)
        sock.listen(16)
        os.replace(tmp, self.path)
        self._ino = os.lstat(self.path).st_ino
        self._sock = sock

    def still_ours(self) -> bool:
        """The socket is still ours and the library still the one we opened."""
        try:
            if os.lstat(self.path).st_ino != self._ino:
                return False
            return file_identity(self.db) == self.expect["database"]
        except OSError:
            return False

    def serve(self) -> None:
        """Answer until idle for ``idle_seconds``, or until the socket or the library is
        no longer ours."""
        import time

        assert self._sock is not None
        self._sock.settimeout(self.poll)
        last = time.monotonic()
        try:
            while True:
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    idle = time.monotonic() - last > self.idle_seconds
                    if idle or self._stop or not self.still_ours():
                        return
                    continue
                with conn:
                    if not self.answer(conn):
                        return
                last = time.monotonic()
        finally:
            self.close()

    def answer(self, conn: socket.socket) -> bool:
        """Answer one connection; False when this helper must stop (the library changed
        under it)."""
        conn.settimeout(REQUEST_TIMEOUT)  # one client at a time: none may hold it long
        try:
            if peer_uid(conn) != self.uid:
                return True  # another user: not a word
            message = json.loads(_read_line(conn))
        except (OSError, ValueError):
            return True
        try:
            reply, go_on = self.reply(message)
        except Exception as exc:  # a bug must not end the helper: that search goes in-process
            print(f"search helper: {type(exc).__name__}: {exc}", file=sys.stderr)
            reply, go_on = {"ok": False, "reason": "failed"}, True
        conn.settimeout(REPLY_TIMEOUT)
        with contextlib.suppress(OSError):  # the client left: its loss
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
        return go_on

    def reply(self, message: Any) -> tuple[dict[str, Any], bool]:
        from docshelf import views
        from docshelf.errors import DocshelfError

        if not self.still_ours():
            return {"ok": False, "reason": "the library was replaced"}, False
        if not isinstance(message, dict):
            return {"ok": False, "reason": "not a request"}, True
        for key, want in self.expect.items():
            if message.get(key) != want:
                return {"ok": False, "reason": f"another {key}"}, True
        shelf = self.shelf
        if shelf.bound_model() != self.model:
            return {"ok": False, "reason": "the library's model changed"}, False
        request = _request(message.get("search"))
        if request is None:
            return {"ok": False, "reason": "a malformed search"}, True
        try:
            for _ in range(3):
                before = shelf.generation()
                result = searched(shelf, request)
                if shelf.generation() == before:
                    return {"ok": True, "generation": before, "result": views.search(result)}, True
        except DocshelfError as exc:
            # the in-process search will raise it again, with its envelope
            return {"ok": False, "reason": exc.code}, True
        return {"ok": False, "reason": "the library kept changing"}, True

    def close(self) -> None:
        if self._db_fd is not None:
            os.close(self._db_fd)
            self._db_fd = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            try:
                if os.lstat(self.path).st_ino == self._ino:
                    os.unlink(self.path)
            except OSError:
                pass


def _request(given: Any) -> SearchRequest | None:
    """A search request from the wire, when every field has its type."""
    if not isinstance(given, dict) or set(given) != set(SearchRequest._fields):
        return None
    request = SearchRequest(**given)
    strings = (request.query, request.mode, request.group)
    if not all(isinstance(v, str) for v in strings):
        return None
    if not isinstance(request.limit, int) or isinstance(request.limit, bool):
        return None
    if not isinstance(request.filters, list) or not all(
        isinstance(f, str) for f in request.filters
    ):
        return None
    if request.expand is not None and not isinstance(request.expand, str):
        return None
    if request.notebook is not None and not isinstance(request.notebook, str):
        return None
    return request


def run_helper(home: Path) -> int:
    """The helper's life: take the library's lock (or leave: one is running), open the
    library, warm up, listen, answer until idle."""
    import fcntl
    import signal

    from docshelf.config import Settings
    from docshelf.durable import private_file
    from docshelf.errors import DocshelfError
    from docshelf.shelf import Shelf

    settings = Settings.from_env(home)
    lock_path = settings.home / LOCK
    try:
        private_file(lock_path)
        lock = open(lock_path, "a")  # noqa: SIM115  (held for the helper's life)
    except OSError:
        return 1
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another helper serves this library
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")  # which process holds it (for `kill`, and tests)
    lock.flush()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with Shelf(settings=settings, embed_purpose="query") as shelf:
            helper = Helper(shelf, settings.search_helper_idle)
            helper.warm()
            helper.bind()
            helper.serve()
    except DocshelfError as exc:
        print(f"search helper for {home}: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        lock.close()
    return 0


if __name__ == "__main__":  # python -m docshelf.cli.resident HOME
    sys.exit(run_helper(Path(sys.argv[1])))
