"""Typesense (``DOCSHELF_SEARCH_URL=typesense://KEY@HOST:PORT[/prefix]``, ``typesenses://``
over TLS): one server holding a library's full text (``typesense_lexical.py``) and its
vectors (here, a ``VectorBackend`` for ``external.py``). docshelf supplies every vector
(no model runs in Typesense). A vector point is a document of the library's vector
collection (``<prefix>_<build>``): the snippet's seq as its id, the chunk id, the
document id and the embedding, never the text. The documents a search's filters let
through are asked of the documents collection (``typesense_documents.py``). Hybrid
search fuses the two lists in docshelf (Typesense 0.24 answers a text query or a vector
query, not both at once)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult, unquote, urlparse

from docshelf.errors import InvalidInput
from docshelf.search.engines.backend import PUSHED, checked_name

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PAGE = 250  # hits a page (Typesense's most)


class TypesenseServer:
    """A client of one Typesense server, and the prefix of this library's collections."""

    def __init__(self, url: ParseResult) -> None:
        import typesense

        if not url.hostname or not url.username:
            raise InvalidInput("DOCSHELF_SEARCH_URL: typesense://API_KEY@HOST:PORT[/prefix]")
        tls = url.scheme == "typesenses"
        port = url.port or (443 if tls else 8108)
        self.where = f"{url.scheme}://{url.hostname}:{port}"
        self.prefix = checked_name(url.path.strip("/"), "DOCSHELF_SEARCH_URL") or None
        node = {"host": url.hostname, "port": port, "protocol": "https" if tls else "http"}
        key = unquote(url.username)  # (a key with reserved characters is percent-encoded)
        config: Any = {"nodes": [node], "api_key": key, "connection_timeout_seconds": 30}
        self.client: Any = typesense.Client(config)  # (its typed dicts: not this module's)

    @classmethod
    def from_url(cls, url: str) -> TypesenseServer:
        return cls(urlparse(url))

    def names(self) -> list[str]:
        return [c["name"] for c in self.client.collections.retrieve()]

    def drop(self, name: str) -> None:
        self.client.collections[name].delete()

    def count(self, name: str) -> int:
        return int(self.client.collections[name].retrieve()["num_documents"])

    def upsert(self, name: str, documents: list[dict[str, Any]]) -> None:
        """Write ``documents`` (replacing those of the same ids); any that fails raises."""
        answers = self.client.collections[name].documents.import_(documents, {"action": "upsert"})
        failed = [a for a in answers if not a.get("success")]
        if failed:
            raise RuntimeError(f"Typesense refused {len(failed)} documents: {failed[0]}")

    def delete(self, name: str, seqs: Sequence[int]) -> None:
        for start in range(0, len(seqs), PAGE):
            ids = ",".join(str(s) for s in seqs[start : start + PAGE])
            self.client.collections[name].documents.delete({"filter_by": f"seq:=[{ids}]"})

    def keys(self, name: str) -> list[int]:
        lines = self.client.collections[name].documents.export({"include_fields": "seq"})
        return [int(json.loads(line)["seq"]) for line in lines.splitlines() if line]

    def search(self, name: str, query: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        """The first ``limit`` hits of one search."""
        return self.search_each(name, [query], limit)[0][0]

    def search_each(
        self, name: str, queries: Sequence[dict[str, Any]], limit: int
    ) -> list[tuple[list[dict[str, Any]], int]]:
        """For each query, its first ``limit`` hits and how many it found: every page of
        every query in one request (multi_search: a vector goes in the body, not the URL)."""
        pages = -(-limit // PAGE)
        searches = [
            {"collection": name, **query, "page": n + 1, "per_page": PAGE}
            for query in queries
            for n in range(pages)
        ]
        results = self.client.multi_search.perform({"searches": searches}, {})["results"]
        out: list[tuple[list[dict[str, Any]], int]] = []
        for at in range(0, len(results), pages):
            hits: list[dict[str, Any]] = []
            for result in results[at : at + pages]:
                if "error" in result:
                    raise RuntimeError(f"Typesense: {result['error']}")
                hits.extend(result["hits"])
            out.append((hits[:limit], int(results[at].get("found", 0))))
        return out

    def close(self) -> None:
        """(Typesense's client holds no connection between requests.)"""


def only(documents: Collection[str] | None) -> dict[str, str]:
    """A ``filter_by`` for those documents (their ids are ``doc_<hex>``: no quoting needed)."""
    return {} if documents is None else {"filter_by": f"document_id:=[{','.join(documents)}]"}


class Typesense:
    """The vector side: ``<prefix>_<build>`` collections of (seq, chunk id, document id,
    embedding)."""

    kind = "typesense"
    pushed = PUSHED

    def __init__(self, server: TypesenseServer) -> None:
        self.server = server
        self.where = server.where

    @classmethod
    def from_url(cls, url: ParseResult) -> Typesense:
        return cls(TypesenseServer(url))

    def names(self) -> list[str]:
        return self.server.names()

    def create(self, name: str, dim: int) -> None:
        fields = [
            {"name": "seq", "type": "int64"},
            {"name": "chunk_id", "type": "string", "index": False, "optional": True},
            {"name": "document_id", "type": "string"},
            {"name": "embedding", "type": "float[]", "num_dim": dim},
        ]
        self.server.client.collections.create({"name": name, "fields": fields})

    def drop(self, name: str) -> None:
        self.server.drop(name)

    def upsert(
        self,
        name: str,
        seqs: Sequence[int],
        vectors: npt.NDArray[np.float32],
        chunks: Sequence[tuple[str, str]],
    ) -> None:
        self.server.upsert(
            name,
            [
                {"id": str(seq), "seq": seq, "chunk_id": c, "document_id": d, "embedding": v}
                for seq, (c, d), v in zip(seqs, chunks, vectors.tolist(), strict=True)
            ],
        )

    def delete(self, name: str, seqs: Sequence[int]) -> None:
        self.server.delete(name, seqs)

    def settle(self, name: str) -> None:
        """(Written points are searchable as they are.)"""

    def nearest(
        self,
        name: str,
        query: npt.NDArray[np.float32],
        limit: int,
        documents: Collection[str] | None,
    ) -> list[tuple[int, float]]:
        vector = ",".join(f"{x:.7g}" for x in query.tolist())
        hits = self.server.search(
            name,
            {
                "q": "*",
                "vector_query": f"embedding:([{vector}], k:{limit})",
                "include_fields": "seq",
                **only(documents),
            },
            limit,
        )
        # cosine distance, 1 - cos (Typesense normalises the vectors it is given)
        return [(int(h["document"]["seq"]), 1.0 - float(h["vector_distance"])) for h in hits]

    def count(self, name: str) -> int:
        return self.server.count(name)

    def keys(self, name: str) -> list[int]:
        return self.server.keys(name)

    def close(self) -> None:
        self.server.close()
