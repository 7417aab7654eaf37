"""The LangChain retriever: LangChain's standard retriever tests (``langchain-tests``),
in process and against a server, and the citation each ``Document`` carries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docshelf.api import create_app
from docshelf.errors import InvalidInput, Unauthorized, Unavailable
from docshelf.shelf import Shelf
from tests.live_server import serve
from tests.optional import require_module

require_module("langchain_core", "pip install 'docshelf[langchain]'")
require_module("langchain_tests", "pip install langchain-tests")

from langchain_core.documents import Document  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from docshelf.integrations.langchain import DocshelfRetriever  # noqa: E402

QUERY = "leader election"


class TestInProcess(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def library(self, shelf: Shelf, notes: Path) -> None:
        shelf.add(notes)
        self.shelf = shelf

    @property
    def retriever_constructor(self) -> type[DocshelfRetriever]:
        return DocshelfRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"shelf": self.shelf}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestOverHttp(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def server(self, shelf: Shelf, notes: Path) -> Iterator[None]:
        user, self.token = shelf.create_user("alice")
        shelf.add(notes, user_id=user.id)
        with serve(create_app(shelf)) as url:
            self.url = url
            yield

    @property
    def retriever_constructor(self) -> type[DocshelfRetriever]:
        return DocshelfRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"base_url": self.url, "token": self.token}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_documents_carry_the_citation(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    docs = DocshelfRetriever(shelf=shelf, k=2).invoke(QUERY)
    top = docs[0]
    assert isinstance(top, Document)
    assert "heartbeat" in top.page_content
    meta = top.metadata
    assert meta["label"] == "Raft (projects/raft.md#1)"
    assert meta["title"] == "Raft"
    assert meta["path"] == str(notes.resolve() / "projects" / "raft.md")
    assert meta["heading_path"] == ["Raft", "Leader election"]
    assert meta["chunk_index"] == 1 and meta["page_start"] is None and meta["page_end"] is None
    assert top.id == meta["chunk_id"] and meta["document_id"].startswith("doc_")
    assert set(meta["scores"]) == {"lexical", "vector", "fused"}
    assert meta["score"] == meta["scores"]["fused"]
    # The same hit, the same citation, whichever way the library is reached.
    assert shelf.context(meta["chunk_id"]).citation.label == meta["label"]


def test_filters_and_mode_per_call_and_in_the_constructor(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    retriever = DocshelfRetriever(shelf=shelf, mode="lexical", filters={"type": "text"})
    assert [d.metadata["label"] for d in retriever.invoke("flour")] == ["todo (todo.txt#0)"]
    tagged = retriever.invoke("flour", filters={"tag": ["baking"]})
    assert [d.metadata["label"] for d in tagged] == ["Bread (cooking.md#0)"]
    with pytest.raises(ValueError, match="Unknown filter colour"):
        DocshelfRetriever(shelf=shelf, filters={"colour": "red"})
    with pytest.raises(InvalidInput):
        retriever.invoke("   ")


def test_server_errors_become_docshelf_errors(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)  # the local admin's, not alice's
    _, token = shelf.create_user("alice")
    with serve(create_app(shelf)) as url:
        with pytest.raises(Unauthorized, match="unknown or revoked"):
            DocshelfRetriever(base_url=url, token="dsk_wrong").invoke(QUERY)
        assert DocshelfRetriever(base_url=url, token=token).invoke(QUERY) == []  # not hers
        with pytest.raises(InvalidInput):
            DocshelfRetriever(base_url=url, token=token).invoke(QUERY, mode="psychic")
    with pytest.raises(ValueError, match="either `shelf`"):
        DocshelfRetriever()
    with pytest.raises(ValueError, match="needs a `token`"):
        DocshelfRetriever(base_url="http://127.0.0.1:9")
    with pytest.raises(Unavailable, match="Cannot reach"):
        DocshelfRetriever(base_url="http://127.0.0.1:9", token="t", timeout=2).invoke(QUERY)


PAXOS = "---\ntags: [consensus]\n---\n# Paxos\n\nAcceptors promise ballots.\n"
WORDS = "acceptors ballots flour"


def _labels(retriever: DocshelfRetriever, **filters: Any) -> list[str]:
    return sorted(d.metadata["label"] for d in retriever.invoke(WORDS, filters=filters))


def _filters_of_every_face(retriever: DocshelfRetriever) -> None:
    assert len(_labels(retriever)) == 3
    # a broader concept includes its narrower ones; a label works like an id
    assert _labels(retriever, concept="computing") == ["Paxos (paxos.md#0)"]
    assert _labels(retriever, concept=["Food"]) == ["Bread (cooking.md#0)"]
    assert _labels(retriever, concept="no-such-thing") == []
    assert _labels(retriever, type="text") == ["todo (todo.txt#0)"]
    assert _labels(retriever, type="markdown", concept="food") == ["Bread (cooking.md#0)"]
    assert _labels(retriever, tag="baking", type="markdown") == ["Bread (cooking.md#0)"]


def test_concept_and_type_filters_in_process(shelf: Shelf, notes: Path) -> None:
    (notes / "paxos.md").write_text(PAXOS)  # its tag maps to distributed-systems
    shelf.add(notes)
    retriever = DocshelfRetriever(shelf=shelf, mode="lexical", k=10)
    _filters_of_every_face(retriever)
    only_food = DocshelfRetriever(shelf=shelf, mode="lexical", k=10, filters={"concept": "food"})
    assert [d.metadata["label"] for d in only_food.invoke(WORDS)] == ["Bread (cooking.md#0)"]
    with pytest.raises(ValueError, match="Bad filters"):
        DocshelfRetriever(shelf=shelf, filters={"concept": 3})


def test_concept_and_type_filters_over_http(shelf: Shelf, notes: Path) -> None:
    (notes / "paxos.md").write_text(PAXOS)
    user, token = shelf.create_user("alice")
    shelf.add(notes, user_id=user.id)
    with serve(create_app(shelf)) as url:
        retriever = DocshelfRetriever(base_url=url, token=token, mode="lexical", k=10)
        _filters_of_every_face(retriever)
