"""``docshelf status --check``: whether the library is true to its files, its chunks and
its indexes; with ``repair``, mended where it can be, saying what was done.

What it looks at:

- the store (``Store.problems``): its engine's own integrity (SQLite's integrity check
  and FTS5's; pgvector's HNSW index), chunks of no document, documents cited at a path
  none of their files is at, complete documents with no snippet, snippets of complete
  documents with no vector;
- every file the library holds still on disk. A file that is gone has its row dropped
  with ``repair`` (and its document, when no other file holds it) exactly as ``sync``
  drops a deleted file. A file under a folder that cannot be read, or of a source whose
  root is missing, is reported and kept: a failure, never a deletion (``sync._gone``);
- the sidecar indexes beside a SQLite store: their entries against the store's rows
  (``SidecarIndex.audit``), rebuilt from the store with ``repair``.

``sync`` runs the cheap part (``mend``): the store's checks that need no scan of its
engine's indexes or of every snippet (the vector count is ``status --check``'s), without
the disk (its own walk has just looked) or the sidecars.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from docshelf.store import FileRecord
from docshelf.wording import counted

if TYPE_CHECKING:
    from docshelf.model import Source, SyncReport
    from docshelf.runtime import Runtime

# How to mend what ``repair`` cannot.
HINTS = {
    "database": "restore a backup, or `docshelf export` what still reads into a new home",
    "no_snippets": "their files give no text to search: `docshelf show ID` tells more",
    "missing_vectors": "`docshelf reindex` embeds them",
    "vector_size": "`docshelf reindex` embeds them again",
    "missing_source": "put it back, or `docshelf remove SOURCE` to let its documents go",
    "unreadable_files": "make them readable again; their documents are kept meanwhile",
}
SHOWN = 20  # the paths or ids a problem lists


@dataclass
class Problem:
    """One kind of thing wrong: what (``text``), a few of the paths or ids concerned
    (``items``), and with ``repair`` what was done (``repaired``; None: nothing could
    be, ``hint`` says what can)."""

    kind: str
    text: str
    items: list[str] = field(default_factory=list)
    hint: str | None = None
    repaired: str | None = None
    fix: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return self.text

    @property
    def repairable(self) -> bool:
        return self.fix is not None


def check(rt: Runtime, *, repair: bool = False, full: bool = True) -> list[Problem]:
    """The library's problems (``full``: with its files on disk and the scans of every
    index); with ``repair``, each mended where it can be."""
    problems = [_stored(rt, kind, text) for kind, text in rt.store.problems(full=full)]
    if full:
        problems += _files(rt)
        problems += _sidecars(rt)
    if repair and problems:
        for problem in problems:
            problem.repaired = problem.fix() if problem.fix else None
        rt.maintain_indexes()  # what the repairs changed, folded into the sidecars
        rt.writer.changed()
    return problems


def mend(rt: Runtime, report: SyncReport) -> None:
    """The cheap part of the check, after a sync: mended where it can be (``repaired``),
    else reported (``problems``)."""
    for problem in check(rt, repair=True, full=False):
        if problem.repaired:
            report.repaired.append(problem.repaired)
        else:
            report.problems.append(problem.text)


def _stored(rt: Runtime, kind: str, text: str) -> Problem:
    """A problem the store found, and how it is mended."""
    store = rt.store
    problem = Problem(kind, text, hint=HINTS.get(kind))
    if kind == "stale_citations":
        stale = store.stale_citations()
        problem.items = stale[:SHOWN]

        def repoint() -> str:
            for document_id in stale:
                rt.writer.repoint(document_id)
            return f"cited {counted(len(stale), 'document')} at a file that holds them"

        problem.fix = repoint
    elif kind == "no_snippets":
        problem.items = store.snippetless_documents()[:SHOWN]
    elif kind not in HINTS:
        problem.fix = lambda: store.repair(kind)
    return problem


def _files(rt: Runtime) -> list[Problem]:
    """The files the library holds that are no longer on disk: gone (dropped as ``sync``
    drops them), unreadable, or of a source whose root is missing (both kept)."""
    gone: list[FileRecord] = []
    unreadable: list[str] = []
    missing: list[Source] = []
    for source in rt.store.list_sources():
        files = rt.store.files_of_source(source.id)
        if not files:
            continue
        root = Path(source.path)
        if not (root.is_dir() if source.kind == "folder" else root.exists()):
            missing.append(source)
            continue
        for path, record in sorted(files.items()):
            state = presence(Path(path), root)
            if state == "gone":
                gone.append(record)
            elif state is not None:
                unreadable.append(f"{path}: {state}")
    problems = []
    if gone:
        paths = [r.path for r in gone]
        problems.append(
            Problem(
                "gone_files",
                f"{counted(len(gone), 'file')} the library holds "
                f"{'is' if len(gone) == 1 else 'are'} gone from disk",
                paths[:SHOWN],
                fix=lambda: _drop(rt, gone),
            )
        )
    if unreadable:
        problems.append(
            Problem(
                "unreadable_files",
                f"{counted(len(unreadable), 'file')} the library holds cannot be read",
                unreadable[:SHOWN],
                HINTS["unreadable_files"],
            )
        )
    for source in missing:
        problems.append(
            Problem(
                "missing_source",
                f"source {source.id} is missing ({source.path}): its documents are kept",
                [source.path],
                HINTS["missing_source"].replace("SOURCE", source.id),
            )
        )
    return problems


def presence(path: Path, root: Path) -> str | None:
    """None when ``path`` is there; ``gone`` when it is not, and the folders above it
    (up to its source's ``root``) can be read; else why it cannot be told (a folder
    that cannot be read, as ``sync``'s walk reports it: never a deletion)."""
    try:
        os.stat(path)
        return None
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    folder = path.parent
    while folder != root and folder != folder.parent and not _exists(folder):
        folder = folder.parent
    if not os.access(folder, os.R_OK | os.X_OK):
        return "unreadable folder: Permission denied"
    return "gone"


def _exists(folder: Path) -> bool:
    try:
        os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True  # there, but not to be looked into: ``os.access`` says so
    return True


def _drop(rt: Runtime, gone: list[FileRecord]) -> str:
    """Forget files gone from disk as ``sync`` does (``DocumentWriter.drop_file``)."""
    removed = 0
    with rt.store.transaction():
        for record in gone:
            removed += rt.writer.drop_file(record)
    return f"forgot {len(gone)} files gone from disk, and {removed} documents only they held"


def _sidecars(rt: Runtime) -> list[Problem]:
    """The sidecar indexes' entries against the store's rows, each rebuilt by ``repair``."""
    problems = []
    for kind, index, maintain in (
        ("lexical_sidecar", rt.lexical_index, rt.maintain_lexical_index),
        ("vector_sidecar", rt.vector_index, rt.maintain_vector_index),
    ):
        audit = index.audit() if index is not None else None
        if audit is None or not audit.problems():
            continue

        def rebuild(name: str = audit.index, run: Callable[..., str] = maintain) -> str | None:
            outcome = run(rebuild=True)
            return None if outcome.startswith("failed") else f"rebuilt the {name}: {outcome}"

        problems.append(Problem(kind, "; ".join(audit.problems()), fix=rebuild))
    return problems
