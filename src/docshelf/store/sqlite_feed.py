"""The SQLite store's feed for its sidecar indexes (``SidecarStore`` in
search/engines/sidecar.py): the ANN graph (usearch.py) and the lexical index
(tantivy.py) read vectors and snippets by chunk seq, and follow the ``vector_log`` and
``lexical_log`` that the schema's triggers write in the same transaction as the
change itself."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from docshelf.model import Document
from docshelf.store.base import ChunkPlace, SearchFilters
from docshelf.store.rows import DOCUMENT_FIELDS, document_from_row
from docshelf.store.sql.catalogue import CatalogueSQL
from docshelf.store.sql.core import DATE_SQL, Rows
from docshelf.store.sql.reads import PLACE_COLUMNS, SearchReadsSQL

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    SeqMatrix = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]


class SQLiteSidecarFeed(CatalogueSQL, SearchReadsSQL):
    # -- the ANN index's feed; vectors are keyed by chunk seq --------------------------
    def vector_count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM vectors")[0][0])

    def vector_seqs(self) -> npt.NDArray[np.int64]:
        """The chunk seq of every vector, sorted."""
        return self._seqs("SELECT chunk_seq FROM vectors ORDER BY chunk_seq")

    def vector_log_position(self) -> int:
        """The last vector_log entry ever written (0 when none)."""
        return self._log_position("vector_log")

    def vector_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, chunk seqs whose vector changed after ``after``). Raises
        ``LookupError`` when entries after ``after`` were pruned (read a newer checkpoint)."""
        return self._log_changes("vector_log", after)

    def prune_vector_log(self, through: int) -> None:
        self._prune_log("vector_log", through)

    def vectors_by_seq(self, seqs: Sequence[int]) -> SeqMatrix:
        """The vectors of those chunk seqs that still have one (in seq order)."""
        rows = self._each_among(
            "chunk_seq", list(seqs), "SELECT chunk_seq, embedding FROM vectors WHERE {}"
        )
        rows.sort(key=lambda r: int(r[0]))
        return self._seq_matrix(rows)

    def iter_vectors(self, batch: int = 20_000) -> Iterator[SeqMatrix]:
        """Every vector, ``batch`` rows at a time in seq order (never all in memory)."""
        last = -1
        while True:
            rows = self._q(
                "SELECT chunk_seq, embedding FROM vectors WHERE chunk_seq > ? "
                "ORDER BY chunk_seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield self._seq_matrix(rows)

    def _seq_matrix(self, rows: Rows) -> SeqMatrix:
        import numpy as np

        dim = int(self.get_meta("embedding_dim") or 0)
        seqs = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        return seqs, self.dialect.vector_matrix([r[1] for r in rows], dim)

    def visible_snippets(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for those seqs that search may show: a snippet with a
        vector, of a complete document matching the filters."""
        return self._visible(
            "vector", seqs, filters, "JOIN vectors v ON v.chunk_seq = c.seq", "1 = 1"
        )

    def vectors_matching(self, filters: SearchFilters) -> SeqMatrix:
        """The vectors search may show under these filters (for very selective ones)."""
        where, params = self._filters(filters)
        rows = self._q(
            "SELECT v.chunk_seq, v.embedding FROM vectors v JOIN chunks c ON c.seq = v.chunk_seq "
            f"JOIN documents d ON d.id = c.document_id WHERE d.status = 'complete' {where} "
            "ORDER BY v.chunk_seq",
            params,
        )
        return self._seq_matrix(rows)

    # -- the lexical index's feed; snippets are keyed by chunk seq ---------------------------
    def snippet_count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM chunks WHERE tier = 'snippet'")[0][0])

    def snippet_seqs(self) -> npt.NDArray[np.int64]:
        """The seq of every snippet, sorted."""
        return self._seqs("SELECT seq FROM chunks WHERE tier = 'snippet' ORDER BY seq")

    def _seqs(self, query: str) -> npt.NDArray[np.int64]:
        import numpy as np

        rows = self._q(query)
        return np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))

    def lexical_log_position(self) -> int:
        """The last lexical_log entry ever written (0 when none)."""
        return self._log_position("lexical_log")

    def lexical_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, snippet seqs added or removed after ``after``). Raises
        ``LookupError`` when entries after ``after`` were pruned (rebuild instead)."""
        return self._log_changes("lexical_log", after)

    def prune_lexical_log(self, through: int) -> None:
        self._prune_log("lexical_log", through)

    def snippets_by_seq(self, seqs: Sequence[int]) -> list[tuple[int, str, str]]:
        """(seq, header, text) of those snippet seqs that still exist, in seq order."""
        rows = self._each_among(
            "seq",
            list(seqs),
            "SELECT seq, header, text FROM chunks WHERE {} AND tier = 'snippet'",
        )
        return sorted((int(r[0]), r[1], r[2]) for r in rows)

    def iter_snippets(self, batch: int = 20_000) -> Iterator[list[tuple[int, str, str]]]:
        """Every snippet's (seq, header, text), ``batch`` rows at a time in seq order."""
        last = -1
        while True:
            rows = self._q(
                "SELECT seq, header, text FROM chunks WHERE seq > ? AND tier = 'snippet' "
                "ORDER BY seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield [(int(r[0]), r[1], r[2]) for r in rows]

    def snippet_places(self, seqs: Sequence[int]) -> dict[int, tuple[str, ChunkPlace]]:
        """chunk seq -> (chunk id, place), for those seqs that are snippets (what a
        sidecar index keeps of each: search/entries.py)."""
        rows = self._each_among(
            "c.seq",
            list(seqs),
            f"SELECT c.seq, c.id, {PLACE_COLUMNS} FROM chunks c WHERE {{}} AND c.tier = 'snippet'",
        )
        return {int(r[0]): (r[1], self._place(r, 2)) for r in rows}

    def dated_documents(self, after: str, limit: int) -> list[tuple[Document, float]]:
        """The first ``limit`` documents whose id sorts after ``after``, in id order, each
        with its date (``DATE_SQL``): an engine's documents collection
        (search/engines/typesense_documents.py)."""
        columns = ", ".join(f"d.{c}" for c in DOCUMENT_FIELDS)
        rows = self._q(
            f"SELECT {columns}, {DATE_SQL} FROM documents d WHERE d.id > ? ORDER BY d.id LIMIT ?",
            (after, limit),
        )
        decode = self.dialect.decode_list
        return [(document_from_row(r[:-1], {}, decode), float(r[-1])) for r in rows]

    def documents_among(self, filters: SearchFilters, document_ids: Sequence[str]) -> set[str]:
        """Those of ``document_ids`` that match ``filters`` (whatever their status), each
        answer kept in the memo of reads per filter set."""
        where, params = self._filters(filters)

        def read(ids: list[str]) -> dict[str, bool]:
            rows = self._each_among(
                "d.id", ids, f"SELECT d.id FROM documents d WHERE {{}} {where}", after=params
            )
            return dict.fromkeys((r[0] for r in rows), True)

        return set(self._memo_many(("matching", filters), list(dict.fromkeys(document_ids)), read))

    def matching_documents(self, filters: SearchFilters) -> frozenset[str]:
        """The ids of every document that matches ``filters`` (whatever its status), kept
        in the memo of reads until a commit (a grant moves no generation)."""
        return self._memo(
            ("all matching", filters), lambda: frozenset(self.documents_matching(filters))
        )

    def incomplete_documents(self) -> frozenset[str]:
        """The ids of the documents search may not show yet, or no longer (not
        ``complete``: on their way through the pipeline, or failed), whatever their
        chunks and vectors — usually few (a partial index holds them)."""

        def read() -> frozenset[str]:
            rows = self._q("SELECT id FROM documents WHERE status != 'complete'")
            return frozenset(r[0] for r in rows)

        return self._memo("incomplete_documents", read)

    def lexical_visible(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for those seqs lexical search may show: a snippet of a
        complete document matching the filters."""
        return self._visible("lexical", seqs, filters, "", "c.tier = 'snippet'")

    def _visible(
        self, side: str, seqs: Sequence[int], filters: SearchFilters, join: str, test: str
    ) -> dict[int, str]:
        """The two visibility checks, one statement per batch of seqs, each answer kept
        in the memo of reads (per filter set), and each visible chunk's place with it
        (what ``chunk_places`` will be asked next, from the rows read here anyway)."""
        where, params = self._filters(filters)

        def read(batch: list[int]) -> dict[int, str]:
            places = self._memo_table("chunk_place")  # taken before the rows are read
            known = self._memo_table("chunk_seq")  # chunk id -> seq, for reads by id later
            rows = self._each_among(
                "c.seq",
                batch,
                f"SELECT c.seq, c.id, {PLACE_COLUMNS} FROM chunks c {join} "
                "JOIN documents d ON d.id = c.document_id "
                f"WHERE {{}} AND {test} AND d.status = 'complete' {where}",
                after=params,
            )
            if places is not None and known is not None:
                for r in rows:
                    places[r[1]] = self._place(r, 2)
                    known[r[1]] = int(r[0])
            return {int(r[0]): r[1] for r in rows}

        return self._memo_many(("visible", side, filters), list(dict.fromkeys(seqs)), read)

    # -- the two logs ---------------------------------------------------------------------
    def _log_position(self, log: str) -> int:
        def read() -> int:
            rows = self._q("SELECT seq FROM sqlite_sequence WHERE name = ?", (log,))
            return int(rows[0][0]) if rows else 0

        return self._memo(("log_position", log), read)

    def _log_changes(self, log: str, after: int) -> tuple[int, list[int]]:
        rows = self._q(f"SELECT seq, chunk_seq FROM {log} WHERE seq > ? ORDER BY seq", (after,))
        # Read the prune mark after the rows: a prune that raced the read shows here.
        if int(self.get_meta(f"{log}_pruned") or 0) > after:
            raise LookupError(f"{log} was pruned past {after}")
        position = int(rows[-1][0]) if rows else after
        return position, list(dict.fromkeys(int(r[1]) for r in rows))

    def _prune_log(self, log: str, through: int) -> None:
        with self.transaction():
            self._x(f"DELETE FROM {log} WHERE seq <= ?", (through,))
            self._x(
                f"INSERT INTO meta(key, value) VALUES ('{log}_pruned', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = "
                "MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                (str(through),),
            )
