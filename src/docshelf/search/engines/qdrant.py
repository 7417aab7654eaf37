"""Qdrant as the vector engine (``external.py``): ``qdrant://[KEY@]HOST:PORT[/name]`` (a
server; ``qdrants://`` over TLS) or ``qdrant+local:///path[?collection=name]`` (the
client's own local mode, one process at a time). A point's id is its snippet's seq; its
payload the chunk id and document id, the latter indexed for the filter."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult, unquote

from docshelf.errors import InvalidInput
from docshelf.search.engines.backend import PUSHED

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PAGE = 10_000  # points read at a time by keys()


class Qdrant:
    kind = "qdrant"
    pushed = PUSHED  # documents a filter may name for the engine to apply it

    def __init__(self, where: str, **client: Any) -> None:
        from qdrant_client import QdrantClient

        self.where = where
        self._client = QdrantClient(**client)

    @classmethod
    def from_url(cls, url: ParseResult) -> Qdrant:
        if url.scheme == "qdrant+local":
            if not url.path or url.netloc:
                raise InvalidInput("DOCSHELF_VECTOR_URL: qdrant+local:///path/to/folder")
            local = cls(f"qdrant+local://{url.path}", path=url.path)
            local.pushed = 0  # its filter is a Python loop over every point: fetch deeper
            return local
        if not url.hostname:
            raise InvalidInput("DOCSHELF_VECTOR_URL: qdrant://[KEY@]HOST:PORT[/collection]")
        tls = url.scheme == "qdrants"
        return cls(
            f"{url.scheme}://{url.hostname}:{url.port or 6333}",
            host=url.hostname,
            port=url.port or 6333,
            https=tls,
            api_key=unquote(url.username) if url.username else None,
            timeout=30,
        )

    def names(self) -> list[str]:
        return [c.name for c in self._client.get_collections().collections]

    def create(self, name: str, dim: int) -> None:
        from qdrant_client import models

        self._client.create_collection(
            name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if not self.where.startswith("qdrant+local"):  # (local mode has no payload index)
            self._client.create_payload_index(
                name, "document_id", field_schema=models.PayloadSchemaType.KEYWORD
            )

    def drop(self, name: str) -> None:
        self._client.delete_collection(name)

    def upsert(
        self,
        name: str,
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        chunks: Sequence[tuple[str, str]],
    ) -> None:
        from qdrant_client import models

        payloads = [{"chunk_id": c, "document_id": d} for c, d in chunks]
        batch = models.Batch(ids=list(seqs), vectors=vectors.tolist(), payloads=payloads)
        self._client.upsert(name, points=batch, wait=True)

    def delete(self, name: str, seqs: Sequence[int]) -> None:
        from qdrant_client import models

        self._client.delete(name, models.PointIdsList(points=list(seqs)), wait=True)

    def settle(self, name: str) -> None:
        """(Written points are searchable as they are.)"""

    def nearest(
        self,
        name: str,
        query: npt.NDArray[np.float32],
        limit: int,
        documents: Collection[str] | None,
    ) -> list[tuple[int, float]]:
        from qdrant_client import models

        only = None
        if documents is not None:
            match = models.MatchAny(any=list(documents))
            only = models.Filter(must=[models.FieldCondition(key="document_id", match=match)])
        found = self._client.query_points(
            name, query=query.tolist(), limit=limit, query_filter=only, with_payload=False
        )
        return [(int(p.id), float(p.score)) for p in found.points]

    def count(self, name: str) -> int:
        return int(self._client.count(name, exact=True).count)

    def keys(self, name: str) -> list[int]:
        out: list[int] = []
        offset: Any = None
        while True:
            points, offset = self._client.scroll(
                name, limit=PAGE, offset=offset, with_payload=False, with_vectors=False
            )
            out.extend(int(p.id) for p in points)
            if offset is None:
                return out

    def close(self) -> None:
        self._client.close()
