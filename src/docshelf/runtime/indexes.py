"""The upkeep of the derived indexes beside the store (SQLite's sidecars: the tantivy
lexical index and the ANN vector index), after the writes that change what they hold.
Never fails a write: search stays correct without them, only slower."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from docshelf import progress as _progress
from docshelf.progress import Progress, ProgressEvent

if TYPE_CHECKING:
    from docshelf.search.engines import LexicalSidecar, VectorSidecar

log = logging.getLogger("docshelf")


def maintain_indexes(
    vector_index: VectorSidecar | None,
    lexical_index: LexicalSidecar | None,
    *,
    force: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> str:
    """Bring both up to date: the lexical index (``maintain_lexical_index``), then the
    ANN index (switch at the threshold, build, or checkpoint the delta; its outcome is
    returned). The ANN index overlays the delta exactly, so a failure hides nothing."""
    if progress:
        progress(ProgressEvent("index", 0, 2, "indexes", "lexical index"))
    maintain_lexical_index(lexical_index, rebuild=rebuild, progress=progress)
    if progress:
        progress(ProgressEvent("index", 1, 2, "indexes", "vector index"))
    outcome = maintain_vector_index(vector_index, force=force, rebuild=rebuild, progress=progress)
    if progress:
        progress(ProgressEvent("index", 2, 2, "indexes", "done"))
    return outcome


def maintain_vector_index(
    index: VectorSidecar | None,
    *,
    force: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> str:
    """The ANN index: switch at the threshold, build, or checkpoint the delta."""
    return _maintain("vector", index, force, rebuild, progress)


def maintain_lexical_index(
    index: LexicalSidecar | None,
    *,
    force: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> str:
    """The tantivy index: switch at the threshold, build, or apply the store's log.
    Until the index has caught up, FTS5 answers."""
    return _maintain("lexical", index, force, rebuild, progress)


def _maintain(
    name: str,
    index: VectorSidecar | LexicalSidecar | None,
    force: bool,
    rebuild: bool,
    progress: Progress | None,
) -> str:
    """Run a derived index's upkeep ("native" where the store has none beside it). A
    failure is logged, never raised: the index is rebuilt from the store, and the write
    that led here stands."""
    if index is None:
        return "native"
    count = _progress.counter(progress, "index", "snippets")
    try:
        return index.maintain(force=force, rebuild=rebuild, progress=count)
    except Exception as exc:
        log.warning("could not update the %s index: %s", name, exc, exc_info=True)
        return f"failed: {exc}"
