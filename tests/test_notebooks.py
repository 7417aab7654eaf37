"""Notebooks (issue 40): the store's part of them on every backend, then a notebook as
people use one — search, ask and context within it, its filters, and sharing it with
another user without showing them a document they do not hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from docshelf.errors import Conflict, Forbidden, InvalidInput, NotFound
from docshelf.ingest.worker import Worker, WorkerSettings
from docshelf.model import Notebook, Source, User
from docshelf.shelf import Shelf
from docshelf.store import FileRecord, SearchFilters, SearchStore
from tests.test_store import put


def user(uid: str, name: str) -> User:
    return User(uid, name, is_admin=False, created_at=1.0)


def notebook(nid: str, name: str, owner: str = "u1", **kw: object) -> Notebook:
    return Notebook(nid, name, owner, created_at=1.0, updated_at=1.0, **kw)  # type: ignore[arg-type]


# -- the store's contract ----------------------------------------------------------------------


def test_a_notebook_is_kept_with_its_sets_and_found_by_owner_or_reader(
    store: SearchStore,
) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0, user_id="u1"))
    doc = put(store, 1, "x")
    kept = notebook(
        "nb_1",
        "Thesis",
        sources=("src_1",),
        documents=(doc.id,),
        filters=(("tag", "draft"), ("type", "pdf")),
        shared_with=("u2",),
    )
    store.put_notebook(kept)
    assert store.get_notebook("nb_1") == kept
    assert store.notebooks_for("u1") == [kept] == store.notebooks_for("u2")
    assert store.get_notebook("nb_nope") is None
    changed = Notebook("nb_1", "Thesis 2", "u1", created_at=1.0, updated_at=2.0)
    store.put_notebook(changed)  # the sets are replaced, not added to
    assert store.get_notebook("nb_1") == changed and store.notebooks_for("u2") == []
    with pytest.raises(Conflict, match="named 'thesis 2'"):
        store.put_notebook(notebook("nb_2", "thesis 2"))  # names are unique per owner
    store.put_notebook(notebook("nb_3", "Thesis 2", owner="u2"))  # another owner's is fine
    assert store.delete_notebook("nb_1") is True and store.delete_notebook("nb_1") is False
    assert [n.id for n in store.notebooks_for("u2")] == ["nb_3"]


def test_a_notebook_forgets_what_is_deleted(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    doc = put(store, 1, "x")
    store.put_notebook(
        notebook("nb_1", "N", sources=("src_1",), documents=(doc.id,), shared_with=("u2",))
    )
    store.delete_document(doc.id)
    store.delete_source("src_1")
    got = store.get_notebook("nb_1")
    assert got is not None and (got.sources, got.documents) == ((), ())


def test_search_filters_hold_a_notebook_s_documents_only(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.add_source(Source("src_2", "/other", "folder", "h", 1.0))
    held = put(store, 1, "a", source_id="src_2")  # cited elsewhere, a file in src_1 holds it
    store.put_file(FileRecord("/lib/d1.md", "src_1", held.id, 10, 5))
    came = put(store, 2, "b", source_id="src_1")  # came by src_1 (an upload's way)
    named = put(store, 3, "c")  # named by the notebook
    other = put(store, 4, "d", source_id="src_2")
    store.put_notebook(notebook("nb_1", "N", sources=("src_1",), documents=(named.id,)))
    store.put_notebook(notebook("nb_2", "Empty"))
    within = SearchFilters(notebook=("nb_1", 1.0))
    assert store.documents_matching(within) == {held.id, came.id, named.id}
    assert other.id not in store.documents_matching(within)
    assert store.documents_matching(SearchFilters(notebook=("nb_2", 1.0))) == set()
    assert not within.empty


# -- a notebook as people use one --------------------------------------------------------------


@pytest.fixture
def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    thesis, kitchen = tmp_path / "thesis", tmp_path / "kitchen"
    thesis.mkdir()
    kitchen.mkdir()
    (thesis / "raft.md").write_text(
        "---\ntags: [draft]\n---\n# Raft\n\nRaft elects a leader with randomised timeouts "
        "and replicates the log to followers.\n"
    )
    (thesis / "paxos.md").write_text(
        "# Paxos\n\nPaxos reaches consensus when a majority of acceptors promise.\n"
    )
    (kitchen / "bread.md").write_text(
        "# Bread\n\nA leader of the kitchen bakes bread; the starter needs a majority of flour.\n"
    )
    return thesis, kitchen


def paths(shelf: Shelf, query: str, **kw: object) -> set[str]:
    return {h.document.rel_path for h in shelf.search(query, mode="lexical", **kw).hits}  # type: ignore[arg-type]


def test_search_ask_and_context_stay_within_a_notebook(
    shelf: Shelf, two_folders: tuple[Path, Path]
) -> None:
    thesis, kitchen = two_folders
    shelf.add(thesis)
    shelf.add(kitchen)
    assert paths(shelf, "leader majority") == {"raft.md", "paxos.md", "bread.md"}
    nb = shelf.notebooks.create("Thesis", sources=[str(thesis)])
    assert paths(shelf, "leader majority", notebook="Thesis") == {"raft.md", "paxos.md"}
    assert paths(shelf, "leader majority", notebook=nb.id) == {"raft.md", "paxos.md"}
    # the caller's filters narrow it further; the notebook's own filters too
    assert paths(shelf, "leader majority tag:draft", notebook="thesis") == {"raft.md"}
    shelf.notebooks.change("Thesis", filters=["tag=draft"])
    assert paths(shelf, "leader majority", notebook="Thesis") == {"raft.md"}
    shelf.notebooks.change("Thesis", filters=[])

    answer = shelf.ask("Who bakes bread with a starter?", notebook="Thesis")
    assert {Path(c.citation.path).name for c in answer.citations} <= {"raft.md", "paxos.md"}
    bread = shelf.search("bread starter", mode="lexical").hits[0]
    assert bread.document.rel_path == "bread.md"
    with pytest.raises(NotFound, match="notebook"):
        shelf.context(bread.chunk.id, notebook="Thesis")
    raft = shelf.search("raft", mode="lexical", notebook="Thesis").hits[0]
    assert shelf.context(raft.chunk.id, notebook="Thesis").chunks

    # documents by id; dropping the source leaves only them
    bread_doc = bread.document.id
    shelf.notebooks.change("Thesis", add_documents=[bread_doc], drop_sources=[str(thesis)])
    assert paths(shelf, "leader majority", notebook="Thesis") == {"bread.md"}
    # a notebook that names no source nor document is the library, narrowed by its filters
    shelf.notebooks.create("Drafts", filters=["tag=draft"])
    assert paths(shelf, "leader majority", notebook="Drafts") == {"raft.md"}
    shelf.notebooks.change("Drafts", add_documents=[bread_doc])  # now only what it names
    assert paths(shelf, "leader majority", notebook="Drafts") == set()


def test_notebook_names_and_bad_input(shelf: Shelf, two_folders: tuple[Path, Path]) -> None:
    thesis, _ = two_folders
    shelf.add(thesis)
    shelf.notebooks.create("Reading list")
    with pytest.raises(Conflict):
        shelf.notebooks.create("reading LIST")
    with pytest.raises(InvalidInput, match="name"):
        shelf.notebooks.create("  ")
    with pytest.raises(InvalidInput, match="filter"):
        shelf.notebooks.create("Bad", filters=["colour=red"])
    with pytest.raises(InvalidInput, match="file type"):
        shelf.notebooks.create("Bad", filters=["type=spreadsheet"])
    with pytest.raises(NotFound, match="source"):
        shelf.notebooks.create("Bad", sources=["/no/such/folder"])
    with pytest.raises(NotFound, match="document"):
        shelf.notebooks.create("Bad", documents=["doc_nope"])
    with pytest.raises(NotFound, match="No notebook"):
        shelf.search("raft", notebook="Nope")
    assert [n.name for n in shelf.notebooks.list()] == ["Reading list"]  # nothing half-made


def drain(shelf: Shelf) -> None:
    worker = Worker(shelf, WorkerSettings(poll_seconds=0.01, backoff_base=0.01))
    while worker.run_once():
        pass


def test_a_shared_notebook_never_shows_a_reader_a_document_they_do_not_hold(
    shelf: Shelf,
) -> None:
    ann, _ = shelf.create_user("ann")
    bob, _ = shelf.create_user("bob")
    eve, _ = shelf.create_user("eve")
    secret = shelf.upload(ann.id, "secret.md", b"# Secret\n\nThe vault code is tangerine.\n")
    common = b"# Common\n\nThe shared recipe uses tangerine peel.\n"
    both = shelf.upload(ann.id, "common.md", common)
    shelf.upload(bob.id, "mine.md", common)  # the same bytes: bob holds that document too
    drain(shelf)
    docs = [secret.document_id, both.document_id]
    nb = shelf.notebooks.create("Citrus", ann.id, documents=docs)
    assert len(shelf.search("tangerine", mode="lexical", user_id=ann.id, notebook=nb.id).hits)
    with pytest.raises(NotFound):  # not shared yet: bob cannot tell it exists
        shelf.search("tangerine", user_id=bob.id, notebook=nb.id)
    shelf.notebooks.share("Citrus", "bob", ann.id)
    hits = shelf.search("tangerine", mode="lexical", user_id=bob.id, notebook="Citrus").hits
    assert {h.document.id for h in hits} == {both.document_id}  # never ann's secret
    answer = shelf.ask("What is the vault code?", user_id=bob.id, notebook="Citrus")
    assert answer.citations and all(
        shelf.store.get_chunks([c.chunk_id])[0].document_id == both.document_id
        for c in answer.citations
    )
    with pytest.raises(Forbidden, match="read only"):
        shelf.notebooks.change("Citrus", bob.id, name="Mine now")
    with pytest.raises(Forbidden):
        shelf.notebooks.share("Citrus", "eve", bob.id)
    with pytest.raises(NotFound):  # bob cannot add ann's secret to a notebook of his
        shelf.notebooks.create("Stolen", bob.id, documents=[secret.document_id])
    with pytest.raises(NotFound):
        shelf.search("tangerine", user_id=eve.id, notebook=nb.id)
    assert [n.name for n in shelf.notebooks.list(bob.id)] == ["Citrus"]
    shelf.notebooks.share("Citrus", "bob", ann.id, shared=False)
    assert shelf.notebooks.list(bob.id) == []


def test_the_notebook_commands(two_folders: tuple[Path, Path]) -> None:
    from tests.test_cli import run

    thesis, kitchen = two_folders
    assert run("add", str(thesis))[0] == 0 and run("add", str(kitchen))[0] == 0
    code, env = run("notebook", "create", "My thesis", "--source", str(thesis))
    assert code == 0 and env["result"]["name"] == "My thesis"
    assert env["result"]["read_only"] is False and len(env["result"]["sources"]) == 1
    code, env = run("search", "leader majority", "--notebook", "my thesis", "--mode", "lexical")
    assert code == 0
    assert {Path(h["citation"]["path"]).name for h in env["result"]["hits"]} == {
        "raft.md",
        "paxos.md",
    }
    code, env = run("notebook", "add", "My thesis", "--filter", "tag=draft")
    assert code == 0 and env["result"]["filters"] == {"tag": ["draft"]}
    code, env = run("ask", "Who elects a leader?", "--notebook", "My thesis")
    assert code == 0 and {Path(c["citation"]["path"]).name for c in env["result"]["citations"]} == {
        "raft.md"
    }
    chunk = env["result"]["citations"][0]["chunk_id"]
    assert run("context", chunk, "--notebook", "My thesis")[0] == 0
    code, env = run("notebook", "drop", "My thesis", "--filter", "tag=draft")
    assert code == 0 and env["result"]["filters"] == {}
    code, env = run("notebook", "share", "My thesis", "nobody")
    assert code == 1 and env["error"]["code"] == "not_found"
    code, env = run("search", "x", "--notebook", "Nope")
    assert code == 1 and "No notebook 'Nope'" in env["error"]["message"]
    code, env = run("notebook", "list")
    assert [n["name"] for n in env["result"]["notebooks"]] == ["My thesis"]
    assert run("notebook", "delete", "My thesis")[0] == 0
    assert run("notebook", "list")[1]["result"]["notebooks"] == []
    assert run("search", "leader", "--mode", "lexical")[1]["result"]["hits"]  # documents stay


def test_notebooks_over_http(shelf: Shelf) -> None:
    from fastapi.testclient import TestClient

    from docshelf.api import create_app
    from tests.test_api import Api
    from tests.test_api import drain as drain_api

    with TestClient(create_app(shelf)) as client:
        users = {}
        for name in ("ann", "bob"):
            u, token = shelf.create_user(name)
            users[name] = Api(client, token, u)
        ann, bob = users["ann"], users["bob"]
        secret = ann.upload("secret.md", b"# Secret\n\nThe vault code is tangerine.\n").json()
        ann.upload("common.md", b"# Common\n\nThe recipe uses tangerine peel.\n")
        both = bob.upload("mine.md", b"# Common\n\nThe recipe uses tangerine peel.\n").json()
        drain_api(shelf)
        docs = [secret["document_id"], both["document_id"]]
        r = ann.request("POST", "/v1/notebooks", json={"name": "Citrus", "documents": docs})
        assert r.status_code == 201, r.text
        nb = r.json()
        assert nb["read_only"] is False and sorted(nb["documents"]) == sorted(docs)
        r = ann.request("POST", "/v1/notebooks", json={"name": "citrus"})
        assert r.status_code == 409
        r = ann.request("POST", "/v1/notebooks", json={"name": "X", "filters": {"colour": "red"}})
        assert r.status_code == 400 and "colour" in r.json()["error"]["message"]
        r = ann.request("POST", "/v1/notebooks", json={"name": "X", "filters": {"type": "xls"}})
        assert r.status_code == 400 and "file type" in r.json()["error"]["message"]
        r = ann.request(
            "POST", "/v1/notebooks", json={"name": "Mine", "filters": {"tag": ["a", "b"]}}
        )
        assert r.status_code == 201 and r.json()["filters"] == {"tag": ["a", "b"]}
        body = {"query": "tangerine", "mode": "lexical", "notebook": "Citrus"}
        assert len(ann.request("POST", "/v1/search", json=body).json()["hits"]) == 2
        assert bob.request("POST", "/v1/search", json=body).status_code == 404
        assert bob.get(f"/v1/notebooks/{nb['notebook_id']}").status_code == 404
        r = ann.request("PUT", "/v1/notebooks/Citrus/readers", json={"user": "bob"})
        assert r.status_code == 200 and r.json()["shared_with"] == [bob.user.id]
        seen = bob.get("/v1/notebooks").json()["notebooks"]
        assert [(n["name"], n["read_only"], n["shared_with"]) for n in seen] == [
            ("Citrus", True, [])
        ]
        hits = bob.request("POST", "/v1/search", json=body).json()["hits"]
        assert [h["document_id"] for h in hits] == [both["document_id"]]
        asked = bob.request(
            "POST", "/v1/ask", json={"question": "What is the vault code?", "notebook": "Citrus"}
        ).json()
        cited = shelf.store.get_chunks([c["chunk_id"] for c in asked["citations"]])
        assert cited and {c.document_id for c in cited} == {both["document_id"]}
        r = bob.request("PATCH", "/v1/notebooks/Citrus", json={"name": "Mine"})
        assert r.status_code == 403
        chunk = hits[0]["chunk_id"]
        r = bob.get(f"/v1/chunks/{chunk}/context", params={"notebook": "Citrus"})
        assert r.status_code == 200
        r = ann.request(
            "PATCH", "/v1/notebooks/Citrus", json={"drop_documents": [both["document_id"]]}
        )
        assert r.status_code == 200 and r.json()["documents"] == [secret["document_id"]]
        assert (
            bob.get(f"/v1/chunks/{chunk}/context", params={"notebook": "Citrus"}).status_code == 404
        )
        r = ann.request("DELETE", f"/v1/notebooks/Citrus/readers/{bob.user.id}")
        assert r.status_code == 200 and bob.get("/v1/notebooks").json()["notebooks"] == []
        assert ann.request("DELETE", "/v1/notebooks/Citrus").status_code == 200
        assert [n["name"] for n in ann.get("/v1/notebooks").json()["notebooks"]] == ["Mine"]
