"""Blobs in a local folder: ``<root>/<sha[:2]>/<sha[2:4]>/<sha>``.

A blob is written to a temporary file while its hash is computed, fsynced,
and renamed into place, so a blob either exists whole under its hash or not
at all; writing the same bytes twice is harmless.

Several small blobs committed together (``commit_many``: the uploads a server
received at once) are made durable by one file instead of one fsync chain each:
their bytes go into a *pack* in ``tmp/`` (``pack-*``: for each blob a line
``<sha256> <size>`` and its bytes), which is fsynced once; each blob is then
placed under its hash without an fsync of its own, and a background thread
fsyncs the placed files and drops the pack. Until then the pack is the durable
copy: opening the store (every process does, before it reads a blob) restores
from a pack left by a stopped process whatever of its blobs is missing or not
whole, then drops it. A pack being written or settled is locked (``flock``) by
its process, so no other process takes it for a left one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import queue
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from docshelf.blobs import blob_key, commit_side_by_side
from docshelf.errors import DocshelfError, NotFound, TooLarge, from_os_error

log = logging.getLogger("docshelf")


@contextlib.contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """A full or read-only disk as StorageFull / ReadOnlyStorage; other OSErrors as is."""
    try:
        yield
    except OSError as exc:
        ours = from_os_error(exc, what)
        if ours is None:
            raise
        raise ours from exc


# An upload up to this size stays in memory until ``commit``, which then writes it to its
# temporary file, fsyncs and places it in one go — on the threadpool, where the API calls
# it — so the event loop makes no file system call for it (under a busy disk a mkstemp
# or a write can take milliseconds, and every request waits behind the loop).
SPOOL_BYTES = 1 << 20


class TempWriter:
    """Streams bytes to a temporary file (after the first ``SPOOL_BYTES`` held in memory),
    hashing them and enforcing a size limit.

    ``commit`` fsyncs the file and hands it to ``place(tmp_path, sha256)``, which
    moves it where it belongs (subclasses: a rename, an upload)."""

    def __init__(self, tmp_dir: Path, max_bytes: int) -> None:
        self._max = max_bytes
        self._hash = hashlib.sha256()
        self._dir = tmp_dir
        self._memory: bytearray | None = bytearray()  # until spilled to the file
        self._file: BinaryIO | None = None
        self._tmp: Path | None = None
        self._closed = False
        self.size = 0
        self.sha256 = ""

    def _spill(self) -> None:
        """Open the temporary file and move what is held in memory to it."""
        with _storage_errors("the uploaded file"):
            self._dir.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self._dir, prefix="upload-")
            self._file = os.fdopen(fd, "wb")
            self._tmp = Path(name)
            if self._memory:
                self._file.write(self._memory)
        self._memory = None

    def write(self, data: bytes) -> None:
        assert not self._closed, "writer already closed"
        self.size += len(data)
        if self.size > self._max:
            self.abort()
            raise TooLarge(f"file is over the {self._max / 2**20:.0f} MB upload limit")
        self._hash.update(data)
        if self._memory is not None:
            self._memory += data
            if len(self._memory) > SPOOL_BYTES:
                self._spill()
            return
        assert self._file is not None
        with _storage_errors("the uploaded file"):
            self._file.write(data)

    def digest(self) -> str:
        return self._hash.hexdigest()

    def held(self) -> bytes | None:
        """The bytes, while they are all still in memory (a small upload)."""
        return bytes(self._memory) if self._memory is not None and not self._closed else None

    def stored_elsewhere(self) -> str:
        """The bytes were made durable by someone else (a pack): drop this copy."""
        self.sha256 = self._hash.hexdigest()
        self.abort()
        return self.sha256

    def commit(self) -> str:
        assert not self._closed, "writer already closed"
        self.sha256 = self._hash.hexdigest()
        if self.stored(self.sha256):
            # The same bytes are there, whole (placed only after their fsync): no file,
            # no fsync, no rename, no folder fsync for a duplicate upload.
            self.abort()
            return self.sha256
        try:
            if self._memory is not None:
                self._spill()
            assert self._file is not None and self._tmp is not None
            with _storage_errors("the uploaded file"):
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
            self._file = None
            self._closed = True
            with _storage_errors("the uploaded file"):
                self.place(self._tmp, self.sha256)
        except BaseException:
            self.abort()
            raise
        finally:
            if self._tmp is not None:
                self._tmp.unlink(missing_ok=True)
        return self.sha256

    def place(self, tmp: Path, sha256: str) -> None:
        raise NotImplementedError

    def stored(self, sha256: str) -> bool:
        """Whether these bytes are stored already (then ``commit`` only drops its copy)."""
        return False

    def abort(self) -> None:
        self._closed = True
        self._memory = None
        if self._file is not None:
            with contextlib.suppress(OSError):  # flushing what is dropped anyway: a full disk
                self._file.close()
            self._file = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):  # a read-only disk keeps it; nothing refers to it
                self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TempWriter:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._closed:
            self.abort()


class _LocalWriter(TempWriter):
    def __init__(self, store: LocalBlobStore, max_bytes: int) -> None:
        super().__init__(store.tmp, max_bytes)
        self._store = store

    def stored(self, sha256: str) -> bool:
        return self._store.exists(sha256)

    def place(self, tmp: Path, sha256: str) -> None:
        final = self._store.path(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)  # atomic; the same bytes may land twice, harmlessly
        dir_fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


PACK_PREFIX = "pack-"


def _fsync_path(path: Path, missing_ok: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        if missing_ok:  # deleted meanwhile (the upload's document was removed)
            return
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _folders(placed: Sequence[Path]) -> list[Path]:
    """The folders whose entries name the placed blobs (``<sha[2:4]>/``, and the
    ``<sha[:2]>/`` and root above it, which may be new too)."""
    folders: dict[Path, None] = {}
    for path in placed:
        folders.update(dict.fromkeys([path.parent, path.parent.parent]))
    for path in placed:
        folders[path.parent.parent.parent] = None
    return list(folders)


def _write_fresh(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all (a temporary name, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=".place-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _read_pack(path: Path) -> Iterator[tuple[str, bytes]]:
    """The whole entries of a pack (a torn end, from a crash while it was written, is
    ignored: that batch was never answered)."""
    with path.open("rb") as fh:
        while True:
            line = fh.readline(200)
            if not line.endswith(b"\n"):
                return
            sha, _, size = line.decode("ascii", "replace").strip().partition(" ")
            if not size.isdigit():
                return
            data = fh.read(int(size))
            if len(data) != int(size) or hashlib.sha256(data).hexdigest() != sha:
                return
            yield sha, data


class _Settler:
    """The background thread that makes a pack's placed blobs durable one by one, then
    drops the pack (its lock goes with its file descriptor)."""

    def __init__(self) -> None:
        self._todo: queue.Queue[tuple[int, Path, list[Path]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def settle(self, pack_fd: int, pack: Path, placed: list[Path]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="blob-settler", daemon=True)
                self._thread.start()
        self._todo.put((pack_fd, pack, placed))

    def _run(self) -> None:
        while True:
            pack_fd, pack, placed = self._todo.get()
            try:
                for path in placed:
                    _fsync_path(path, missing_ok=True)
                for folder in _folders(placed):
                    _fsync_path(folder, missing_ok=True)
                pack.unlink(missing_ok=True)
            except OSError as exc:  # the pack stays: the next opening restores from it
                log.warning("could not settle the upload pack %s: %s", pack.name, exc)
            finally:
                os.close(pack_fd)
                self._todo.task_done()

    def wait(self) -> None:
        """Until every pack handed over so far is settled (for tests)."""
        self._todo.join()


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self._settler = _Settler()
        self.recover()

    def recover(self) -> int:
        """Restore blobs from packs that a stopped process left (not locked by a live
        one), then drop those packs; returns how many blobs were restored."""
        try:
            packs = sorted(self.tmp.glob(f"{PACK_PREFIX}*"))
        except OSError:
            return 0
        restored = 0
        for pack in packs:
            try:
                fd = os.open(pack, os.O_RDONLY)
            except FileNotFoundError:
                continue  # settled meanwhile
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live process writes or settles it
                if not pack.exists():
                    continue
                placed = []
                for sha, data in _read_pack(pack):
                    final = self.path(sha)
                    if final.is_file() and final.stat().st_size == len(data):
                        with final.open("rb") as fh:
                            if hashlib.sha256(fh.read()).hexdigest() == sha:
                                placed.append(final)
                                continue
                    _write_fresh(final, data)
                    placed.append(final)
                    restored += 1
                for path in placed:
                    _fsync_path(path)
                for folder in _folders(placed):
                    _fsync_path(folder)
                pack.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not restore from the upload pack %s: %s", pack.name, exc)
            finally:
                os.close(fd)
        return restored

    def commit_many(self, writers: Sequence[_LocalWriter]) -> list[str | BaseException]:
        """Commit several writers: the small new blobs among them through one pack (one
        fsync of it, and of its folder), the rest each on its own, side by side. Each
        outcome is the writer's hash, or the error it failed with."""
        outcomes: list[str | BaseException | None] = [None] * len(writers)
        packed: dict[str, bytes] = {}
        members: list[int] = []
        for i, writer in enumerate(writers):
            data = writer.held()
            sha = writer.digest()
            if data is None or sha in packed:
                continue
            if self.exists(sha):
                continue  # its own commit finds it stored and drops the copy
            packed[sha] = data
            members.append(i)
        if len(packed) >= 2:
            try:
                self._pack(packed)
            except (OSError, DocshelfError) as exc:  # each writer tries on its own below
                log.warning("could not write an upload pack: %s", exc)
            else:
                for i in members:
                    outcomes[i] = writers[i].stored_elsewhere()
        rest = [i for i, outcome in enumerate(outcomes) if outcome is None]
        for i, outcome in zip(rest, commit_side_by_side([writers[i] for i in rest]), strict=True):
            outcomes[i] = outcome
        return [o if o is not None else RuntimeError("not committed") for o in outcomes]

    def _pack(self, blobs: dict[str, bytes]) -> None:
        """Write ``blobs`` to a new pack and fsync it (now they are durable), then place
        each under its hash and hand the pack to the settler."""
        with _storage_errors("the uploaded files"):
            self.tmp.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.tmp, prefix=PACK_PREFIX)
        pack = Path(name)
        settling = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # ours until it is settled (see recover)
            with _storage_errors("the uploaded files"):
                parts = []
                for sha, data in blobs.items():
                    parts += [f"{sha} {len(data)}\n".encode(), data]
                os.write(fd, b"".join(parts))
                os.fsync(fd)
                _fsync_path(self.tmp)  # the pack's name too
                placed = []
                for sha, data in blobs.items():
                    final = self.path(sha)
                    if not final.is_file():
                        _write_fresh(final, data)
                    placed.append(final)
            self._settler.settle(fd, pack, placed)
            settling = True
        finally:
            if not settling:
                pack.unlink(missing_ok=True)
                os.close(fd)

    def settled(self) -> None:
        """Wait until the blobs placed from packs so far are fsynced (for tests)."""
        self._settler.wait()

    def path(self, sha256: str) -> Path:
        return self.root / blob_key(sha256)

    def writer(self, max_bytes: int) -> _LocalWriter:
        return _LocalWriter(self, max_bytes)

    def read(self, sha256: str) -> bytes:
        with self.open(sha256) as fh:
            return fh.read()

    def open(self, sha256: str) -> BinaryIO:
        try:
            return self.path(sha256).open("rb")
        except FileNotFoundError:
            raise NotFound(f"No blob {sha256}") from None

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def delete(self, sha256: str) -> None:
        self.path(sha256).unlink(missing_ok=True)
