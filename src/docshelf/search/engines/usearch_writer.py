"""Writing the vector index's checkpoints (``usearch.py``): a graph built from every
vector in the store, or the published one with the log's changes folded in, written
with its entries to new files and published atomically (``usearch_graph.py`` tells
the files). One process at a time: the index calls its writer under the folder lock
(``SidecarIndex.maintain``), while searches go on from what is published.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.durable import create_private, fsync, make_private, private_dir
from docshelf.search.engines.sidecar import Progress, SidecarStore, remove_index_files
from docshelf.search.engines.usearch_graph import (
    CONNECTIVITY,
    DTYPE,
    ENTRIES_SUFFIX,
    EXPANSION_ADD,
    Checkpoint,
    read_entries,
    usearch_index,
    write_checkpoint,
)
from docshelf.search.entries import UNKNOWN, Entry, entry_of

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def made_entries(store: SidecarStore, seqs: list[int]) -> dict[int, Entry]:
    """The entry of each of ``seqs`` that is a snippet, from its place and text."""
    places = store.snippet_places(seqs)
    texts = {seq: text for seq, _, text in store.snippets_by_seq(list(places))}
    return {seq: entry_of(*places[seq], texts[seq]) for seq in places if seq in texts}


class CheckpointWriter:
    """Writes the checkpoints of the index in ``directory`` from ``store``; once one is
    published, the log is pruned up to it and the files before it are removed."""

    def __init__(self, store: SidecarStore, directory: Path) -> None:
        self._store = store
        self.directory = directory

    def build(self, epoch: str, progress: Progress | None) -> None:
        """A new graph from every vector in the store. The log position is read first:
        whatever changes while the build streams is logged after it and overlaid."""
        import numpy as np

        Index = usearch_index()

        store = self._store
        position = store.vector_log_position()
        generation = store.generation()
        dim = int(store.get_meta("embedding_dim") or 0)
        model = store.get_meta("embedding_model") or ""
        total = store.vector_count()
        graph = Index(
            ndim=dim,
            metric="ip",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        done = 0
        entries = []
        for seqs, matrix in store.iter_vectors():
            if matrix.shape[1] != dim:
                raise ValueError(f"vector of {matrix.shape[1]} dims in a {dim}-dim library")
            graph.add(seqs.astype(np.uint64), matrix)
            entries.append(self._entries_table(seqs.tolist()))
            done += len(seqs)
            if progress:
                progress(done, total, "building the vector index")
        table = np.concatenate(entries, axis=1) if entries else np.zeros((5, 0), np.uint64)
        self._publish(graph, epoch, position, generation, model, dim, len(graph), 0, table)

    def fold(self, base: Checkpoint, position: int, changed: list[int]) -> None:
        """The published graph with the delta applied, as a new checkpoint."""
        import numpy as np

        Index = usearch_index()

        graph = Index.restore(str(self.directory / base.file))
        if graph is None:
            raise ValueError(f"{base.file} is not a usearch index")
        keys = np.asarray(changed, dtype=np.uint64)
        removed = int(graph.remove(keys)) if len(keys) else 0
        seqs, matrix = self._store.vectors_by_seq(changed)
        if len(seqs):
            graph.add(seqs.astype(np.uint64), matrix)
        # the base's entries less the changed seqs, and the re-added seqs' own (all read
        # anew when the base has none, or of another stamp)
        table = read_entries(self.directory, base)
        if table is None:
            table = self._entries_table(np.sort(graph.keys[:]).tolist())  # (keys[:]: one copy)
        else:
            kept = table[:, ~np.isin(table[0], keys)]
            table = np.concatenate([kept, self._entries_table(seqs.tolist())], axis=1)
            table = table[:, np.argsort(table[0], kind="stable")]
        self._publish(
            graph,
            base.epoch,
            position,
            self._store.generation(),
            base.model,
            base.dim,
            len(graph),
            base.replaced + removed,
            table,
            built_count=base.built_count,
        )

    def _entries_table(self, seqs: list[int]) -> npt.NDArray[np.uint64]:
        """The entries of ``seqs`` (sorted) made from the store, as the rows seq, doc,
        ord, head, wide (``UNKNOWN`` for a seq that is no longer a snippet: it is in the
        log, never read)."""
        import numpy as np

        made = made_entries(self._store, seqs)
        rows = [(seq, *made.get(seq, UNKNOWN)) for seq in seqs]
        return np.array(rows, dtype=np.uint64).reshape(-1, 5).T.copy()

    def _publish(
        self,
        graph: Any,
        epoch: str,
        position: int,
        generation: int,
        model: str,
        dim: int,
        count: int,
        replaced: int,
        entries: npt.NDArray[np.uint64],
        *,
        built_count: int | None = None,
    ) -> None:
        """Write the graph and its entries to new files, then point ``current.json`` at
        them atomically; only then is the log pruned and the previous files removed."""
        import numpy as np

        from docshelf.search.evidence import HEADING_KEY_STAMP

        private_dir(self.directory)
        import uuid

        name = f"index-{position}-{uuid.uuid4().hex[:8]}.usearch"
        tmp = self.directory / (name + ".tmp")
        graph.save(str(tmp))
        make_private(tmp)  # (usearch follows the umask; the folder is private meanwhile)
        fsync(tmp)
        os.replace(tmp, self.directory / name)
        table = name + ENTRIES_SUFFIX
        tmp = self.directory / (table + ".tmp")
        with create_private(tmp) as fh:
            np.save(fh, np.ascontiguousarray(entries, dtype=np.uint64))
        fsync(tmp)
        os.replace(tmp, self.directory / table)
        checkpoint = Checkpoint(
            epoch=epoch,
            file=name,
            position=position,
            generation=generation,
            model=model,
            dim=dim,
            count=count,
            built_count=count if built_count is None else built_count,
            replaced=replaced,
            created_at=time.time(),
            entries=table,
            stamp=HEADING_KEY_STAMP,
        )
        write_checkpoint(self.directory, checkpoint)
        self._store.prune_vector_log(position)
        remove_index_files(self.directory, keep=name)
