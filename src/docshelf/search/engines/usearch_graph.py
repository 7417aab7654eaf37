"""The vector index's published graph (``usearch.py``): its files and how it is read.

A checkpoint is two files in the index folder and a record pointing at them: the usearch
HNSW graph (``index-<position>-<id>.usearch``), its keys' entries beside it
(``<graph>.entries.npy``: search/entries.py) and ``current.json`` (``Checkpoint``).
Here are that record, reading the entries table, the graph mapped read-only for search
(``GraphView``), usearch itself, and the graph's shape and search depth;
``usearch_writer.py`` writes checkpoints.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from docshelf.search.engines.sidecar import read_record, write_record

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger("docshelf.search.engines.usearch")  # the vector index's own log

# HNSW "M" of the graphs built from now on. At 1M snippets a graph of M 32 gave recall@10
# 0.993 at ef 256 in 2.2 / 4.2 ms (p50 / p95), where M 16 gave 0.975 at ef 1,024 in
# 3.2 / 6.7 ms, for 14% more file (docs/benchmarks/search-latency.md, "A denser graph");
# graphs of M 16 keep their own depth rule.
CONNECTIVITY = 32
EXPANSION_ADD = 128  # "efConstruction"
# "ef" up to EF_GROWS_FROM vectors (recall and latency by ef: docs/benchmarks/ann-and-sidecars.md,
# "Closing the gap at 1M", and search-latency.md, "A denser graph")
EXPANSION_SEARCH = 256
# Beyond this many vectors ef grows with the graph, by the graph's M: a graph of M 16
# needs ef 1,024 at 1M; one of M 32 does at 1M with 256 what M 16 did at 250k.
EF_GROWS_FROM = {16: 250_000, 32: 1_000_000}
MAX_EXPANSION_SEARCH = 4096
DTYPE = "f16"  # half the memory of f32 at the same recall (bench/ann_libraries.py)
ENTRIES_SUFFIX = ".entries.npy"  # beside each graph file: its keys' entries


@dataclass(frozen=True)
class Checkpoint:
    """What ``current.json`` says about the published index file."""

    epoch: str
    file: str
    position: int  # vector_log position folded into the file
    generation: int  # the store's generation when it was taken
    model: str
    dim: int
    count: int  # vectors in the graph
    built_count: int  # vectors at the last full build
    replaced: int  # removals since that build (tombstones in the graph)
    created_at: float
    entries: str = ""  # the file of the graph keys' entries ("": none, the store checks)
    stamp: str = ""  # evidence.HEADING_KEY_STAMP the entries' heading keys were made with


def expansion_search(count: int, connectivity: int = CONNECTIVITY) -> int:
    """The search depth ("ef") for a graph of ``count`` vectors and M ``connectivity``:
    EXPANSION_SEARCH up to EF_GROWS_FROM (by M; an M it does not list gets M 16's),
    then in proportion to the graph. A bigger graph needs a deeper search for the same
    recall: at 1M with M 16 (efConstruction 128) recall@10 was 0.920 at ef 256, 0.956 at
    512, 0.974 at 768, 0.976 at 1,024 and 0.978 at 2,048, the vector stage ~3 ms slower
    at 1,024 than at 256 (docs/benchmarks/ann-and-sidecars.md, "Closing the gap at 1M");
    with M 32, 0.993 at ef 256 (search-latency.md, "A denser graph")."""
    grows_from = EF_GROWS_FROM.get(connectivity, EF_GROWS_FROM[16])
    if count <= grows_from:
        return EXPANSION_SEARCH
    return min(MAX_EXPANSION_SEARCH, EXPANSION_SEARCH * count // grows_from)


def read_checkpoint(directory: Path) -> Checkpoint | None:
    return read_record(directory, Checkpoint)


def has_entries(directory: Path, checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's graph has entries search can use (of this code's stamp)."""
    from docshelf.search.evidence import HEADING_KEY_STAMP

    return (
        bool(checkpoint.entries)
        and checkpoint.stamp == HEADING_KEY_STAMP
        and (directory / checkpoint.entries).exists()
    )


def read_entries(directory: Path, checkpoint: Checkpoint) -> npt.NDArray[np.uint64] | None:
    """The checkpoint's entries (mapped, read-only), or None: none, of another stamp, or
    unreadable (the store checks every candidate then)."""
    import numpy as np

    if not has_entries(directory, checkpoint):
        return None
    try:
        table = np.load(directory / checkpoint.entries, mmap_mode="r")
    except (OSError, ValueError) as exc:
        log.warning("cannot read the vector index's entries %s: %s", checkpoint.entries, exc)
        return None
    if table.ndim != 2 or table.shape[0] != 5 or table.dtype != np.uint64:
        return None
    # a plain array over the map: np.memmap's own indexing costs ~0.1 ms a search
    return cast("npt.NDArray[np.uint64]", np.asarray(table))


def write_checkpoint(directory: Path, checkpoint: Checkpoint) -> None:
    write_record(directory, checkpoint)


def usearch_index() -> Any:
    """usearch's ``Index`` class (its Python wrapper), for building and folding."""
    usearch_compiled()
    from usearch.index import Index

    return Index


def usearch_compiled() -> Any:
    """usearch's native module. onnxruntime is imported first when it is installed:
    importing it *after* usearch's native module crashes the process (seen with
    onnxruntime 1.32 and usearch 2.x), and the ONNX embedder may be loaded later."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    from usearch import compiled

    return compiled


class Found(NamedTuple):
    """One graph search's answer, nearest first: keys (seqs) and ip distances."""

    keys: npt.NDArray[np.uint64]
    distances: npt.NDArray[np.float32]


class GraphView:
    """A published graph mapped read-only from its file and searched one query at a
    time, through usearch's native module alone.

    Port note: usearch's Python wrapper (``usearch.index``) imports tqdm and ``inspect``
    for progress bars and callbacks a search never uses (~13 ms of a new process's
    search), and wraps each answer in objects read once. This calls the same native
    ``Index`` with the arguments the wrapper's ``restore(view=True)`` and ``search``
    pass (``tests/test_ann.py`` compares both answers); building and folding keep the
    wrapper."""

    def __init__(self, path: str) -> None:
        native = usearch_compiled()
        meta = native.index_dense_metadata_from_path(path)
        self._graph = native.Index(
            ndim=meta["dimensions"],
            dtype=meta["kind_scalar"],
            metric_kind=meta["kind_metric"],
            metric_signature=native.MetricSignature.ArrayArraySize,
        )
        self._graph.view_index_from_path(path, None)
        self._unknown = native.ScalarKind.Unknown  # the query's own dtype
        self.connectivity = int(self._graph.connectivity)
        self._size = len(self._graph)

    def __len__(self) -> int:
        return self._size

    @property
    def expansion_search(self) -> int:
        return int(self._graph.expansion_search)

    @expansion_search.setter
    def expansion_search(self, ef: int) -> None:
        self._graph.expansion_search = ef

    def search(self, query: npt.NDArray[np.float32], k: int) -> Found:
        """The ``k`` nearest keys to ``query`` (one contiguous float32 vector), on this
        thread: one query is one thread's work whatever the pool (the wrapper's default,
        ``threads=0``, gives the same answer)."""
        keys, distances, counts, _, _ = self._graph.search_many(
            query.reshape(1, -1), count=k, exact=False, threads=1, dtype=self._unknown
        )
        n = int(counts[0])
        return Found(keys[0, :n], distances[0, :n])
