"""Milvus as the vector engine (``external.py``): ``milvus:///path/to/file.db`` (Milvus
Lite, one process at a time) or ``milvus://[USER:PASSWORD@]HOST:PORT[/name]`` (a server;
``milvuss://`` over TLS). A row is the snippet's seq (the primary key), its chunk id,
its document id and its vector, never the text; reads are strongly consistent, so a
point is found as soon as it is written."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult, unquote

from docshelf.errors import InvalidInput
from docshelf.search.engines.backend import PUSHED

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PAGE = 10_000  # rows read at a time by keys()
ID_LENGTH = 64  # chunk and document ids are ASCII, far shorter


class Milvus:
    kind = "milvus"
    pushed = PUSHED  # documents a filter may name for the engine to apply it

    def __init__(self, where: str, **client: Any) -> None:
        from pymilvus import MilvusClient

        self.where = where
        self._client = MilvusClient(**client)
        self._lite = where.endswith(".db")

    @classmethod
    def from_url(cls, url: ParseResult) -> Milvus:
        if not url.netloc:
            if not url.path.endswith(".db"):
                raise InvalidInput("DOCSHELF_VECTOR_URL: milvus:///path/to/file.db (Milvus Lite)")
            return cls(f"milvus://{url.path}", uri=url.path)
        if not url.hostname:
            raise InvalidInput("DOCSHELF_VECTOR_URL: milvus://[USER:PASSWORD@]HOST:PORT[/name]")
        http = "https" if url.scheme == "milvuss" else "http"
        address = f"{url.hostname}:{url.port or 19530}"
        token = f"{unquote(url.username)}:{unquote(url.password or '')}" if url.username else ""
        return cls(f"{url.scheme}://{address}", uri=f"{http}://{address}", token=token)

    def names(self) -> list[str]:
        return [str(n) for n in self._client.list_collections()]

    def create(self, name: str, dim: int) -> None:
        from pymilvus import DataType

        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("seq", DataType.INT64, is_primary=True)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=ID_LENGTH)
        schema.add_field("document_id", DataType.VARCHAR, max_length=ID_LENGTH)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        index = self._client.prepare_index_params()
        # Milvus Lite keeps a flat (exact) index; a server builds HNSW
        kind = "FLAT" if self._lite else "HNSW"
        index.add_index("vector", metric_type="COSINE", index_type=kind)
        self._client.create_collection(
            name, schema=schema, index_params=index, consistency_level="Strong"
        )

    def drop(self, name: str) -> None:
        self._client.drop_collection(name)

    def upsert(
        self,
        name: str,
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        chunks: Sequence[tuple[str, str]],
    ) -> None:
        rows = [
            {"seq": seq, "chunk_id": c, "document_id": d, "vector": v}
            for seq, (c, d), v in zip(seqs, chunks, vectors.tolist(), strict=True)
        ]
        self._client.upsert(name, rows)

    def delete(self, name: str, seqs: Sequence[int]) -> None:
        self._client.delete(name, ids=list(seqs))

    def settle(self, name: str) -> None:
        self._client.flush(name)

    def nearest(
        self,
        name: str,
        query: npt.NDArray[np.float32],
        limit: int,
        documents: Collection[str] | None,
    ) -> list[tuple[int, float]]:
        only = "" if documents is None else f"document_id in {json.dumps(sorted(documents))}"
        found = self._client.search(
            name, [query.tolist()], limit=min(limit, 16_384), filter=only, output_fields=[]
        )
        return [(int(hit["seq"]), float(hit["distance"])) for hit in found[0]]

    def count(self, name: str) -> int:
        rows = self._client.query(name, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    def keys(self, name: str) -> list[int]:
        out: list[int] = []
        rows = self._client.query_iterator(name, batch_size=PAGE, output_fields=["seq"])
        while page := rows.next():
            out.extend(int(r["seq"]) for r in page)
        rows.close()
        return out

    def close(self) -> None:
        self._client.close()
