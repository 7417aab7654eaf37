"""What an engine of the user's own offers the index that keeps it (``external.py``): its
collections of points keyed by snippet seq, each with a unit vector and a payload of
(chunk id, document id), never text. One file an engine implements it: ``qdrant.py``,
``milvus.py``, ``chroma.py``."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol

from docshelf.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.store.base import SearchStore

# A filter letting through at most this many documents is applied by the engine (their
# ids in its query); one letting through more is checked against the store.
PUSHED = 1024
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")


class VectorBackend(Protocol):
    """One engine's collections as the index uses them: points keyed by snippet seq,
    unit vectors compared by cosine, a payload of (chunk id, document id)."""

    kind: str  # "qdrant"
    where: str  # the URL without credentials (a record names the engine it was built on)
    pushed: int  # the most documents a filter may name for the engine to apply it (0: none)

    def names(self) -> list[str]:
        """The engine's collections."""
        ...

    def create(self, name: str, dim: int) -> None: ...
    def drop(self, name: str) -> None: ...
    def upsert(
        self,
        name: str,
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        chunks: Sequence[tuple[str, str]],
    ) -> None:
        """Write the points ``seqs`` (each with its chunk id and document id)."""
        ...

    def delete(self, name: str, seqs: Sequence[int]) -> None: ...
    def settle(self, name: str) -> None:
        """Make what was just written searchable at full speed (Milvus seals its
        segments: a search of unsealed ones scans them, 0.8 s at 20k points)."""
        ...

    def nearest(
        self,
        name: str,
        query: npt.NDArray[np.float32],
        limit: int,
        documents: Collection[str] | None,
    ) -> list[tuple[int, float]]:
        """(seq, cosine similarity), best first; only ``documents``' when given."""
        ...

    def count(self, name: str) -> int: ...
    def keys(self, name: str) -> list[int]:
        """Every point's seq."""
        ...

    def close(self) -> None: ...


def collection_base(store: SearchStore, name: str | None) -> str:
    """The name of a library's collections in an engine: the URL's, else
    ``docshelf_<library>`` (an id minted once in the store's meta), so libraries sharing
    an engine never meet."""
    if name:
        return name
    library = store.get_meta("library_id")
    if not library:
        import uuid

        library = uuid.uuid4().hex[:8]
        with store.transaction():
            store.set_meta("library_id", library)
    return f"docshelf_{library}"


def checked_name(name: str, key: str) -> str:
    """A collection name a URL gives (``key``: the setting), if every engine takes it."""
    if name and not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{key}: collection {name!r} must be a letter, then letters, digits or _ (at most 48)"
        )
    return name
