"""Chroma as the vector engine (``external.py``): ``chroma:///path[?collection=name]`` (an
embedded client on its own persist folder) or ``chroma://HOST:PORT[/name]`` (a Chroma
server; ``chromas://`` over TLS). docshelf gives every vector (no Chroma-side model);
a point's id is its snippet's seq, its metadata the chunk id and document id, and it
carries no document text. Telemetry is off."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult

from docshelf.errors import InvalidInput
from docshelf.search.engines.backend import PUSHED

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PAGE = 10_000  # points read at a time by keys()
SEARCH_DEPTH = 128  # the HNSW graph's ef at search (Chroma's default is 100)


class Chroma:
    kind = "chroma"
    pushed = PUSHED  # documents a filter may name for the engine to apply it

    def __init__(self, where: str, client: Any) -> None:
        self.where = where
        self._client = client
        self._held: dict[str, Any] = {}  # name -> collection handle

    @classmethod
    def from_url(cls, url: ParseResult) -> Chroma:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if not url.netloc:
            if not url.path:
                raise InvalidInput("DOCSHELF_VECTOR_URL: chroma:///path/to/folder")
            return cls(f"chroma://{url.path}", chromadb.PersistentClient(url.path, settings))
        if not url.hostname:
            raise InvalidInput("DOCSHELF_VECTOR_URL: chroma://HOST:PORT[/collection]")
        port = url.port or 8000
        client = chromadb.HttpClient(
            url.hostname, port, ssl=url.scheme == "chromas", settings=settings
        )
        return cls(f"{url.scheme}://{url.hostname}:{port}", client)

    def _collection(self, name: str) -> Any:
        held = self._held.get(name)
        if held is None:
            held = self._held[name] = self._client.get_collection(name, embedding_function=None)
        return held

    def names(self) -> list[str]:
        return [c if isinstance(c, str) else c.name for c in self._client.list_collections()]

    def create(self, name: str, dim: int) -> None:
        self._held[name] = self._client.create_collection(
            name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine", "ef_search": SEARCH_DEPTH}},
            metadata={"docshelf_dim": dim},
        )

    def drop(self, name: str) -> None:
        self._held.pop(name, None)
        self._client.delete_collection(name)

    def upsert(
        self,
        name: str,
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        chunks: Sequence[tuple[str, str]],
    ) -> None:
        self._collection(name).upsert(
            ids=[str(seq) for seq in seqs],
            embeddings=vectors,
            metadatas=[{"chunk_id": c, "document_id": d} for c, d in chunks],
        )

    def delete(self, name: str, seqs: Sequence[int]) -> None:
        self._collection(name).delete(ids=[str(seq) for seq in seqs])

    def settle(self, name: str) -> None:
        """(Written points are searchable as they are.)"""

    def nearest(
        self,
        name: str,
        query: npt.NDArray[np.float32],
        limit: int,
        documents: Collection[str] | None,
    ) -> list[tuple[int, float]]:
        collection = self._collection(name)
        where = None if documents is None else {"document_id": {"$in": list(documents)}}
        found = collection.query(
            query_embeddings=[query],
            n_results=min(limit, max(collection.count(), 1)),
            where=where,
            include=["distances"],
        )
        ids, distances = found["ids"][0], (found["distances"] or [[]])[0]
        return [(int(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def count(self, name: str) -> int:
        return int(self._collection(name).count())

    def keys(self, name: str) -> list[int]:
        collection = self._collection(name)
        out: list[int] = []
        while True:
            page = collection.get(limit=PAGE, offset=len(out), include=[])["ids"]
            out.extend(int(i) for i in page)
            if len(page) < PAGE:
                return out

    def close(self) -> None:
        self._held.clear()
