"""Enrichment: offline (deterministic, no server) and with an LLM (a fake OpenAI-protocol
server on loopback), the cache, distillates, concepts in the retrieval header."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.errors import NotFound
from docshelf.knowledge.enrich import (
    GENERAL,
    EnrichSettings,
    guess_document_type,
    offline_enrichment,
    split_sentences,
)
from docshelf.knowledge.enricher import Enricher
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.llm.openai import OpenAILLM
from docshelf.model import DOCUMENT_TYPES, Chunk, Document, Enrichment, Tier
from docshelf.search.query import lexical_terms
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server
from tests.fakes import HashEmbedder

DB_NOTE = (
    "# Choosing a database\n\n"
    "PostgreSQL is a relational database that speaks SQL and keeps data safe with a "
    "write-ahead log. SQLite is a database in a single file, with SQL too. "
    "An index makes a database query fast when the table is large. "
    "A transaction groups database writes so they happen together or not at all.\n\n"
    "## Backups\n\nA database backup should be tested by restoring it somewhere else. "
    "Replication copies the write-ahead log of the database to a standby server.\n"
)
BREAD_NOTE = (
    "---\ntitle: Bread\ntags: [food]\n---\n# Sourdough\n\n"
    "Feed the starter with flour and water the night before baking bread. "
    "The dough rises slowly overnight in a cool kitchen and gains flavour. "
    "Bake the loaf in a very hot oven with steam for a crisp crust.\n"
)


@pytest.fixture(autouse=True)
def enrichment_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSHELF_ENRICH", "auto")


@pytest.fixture
def embedder() -> HashEmbedder:
    """Wide enough that unrelated words rarely share a dimension."""
    return HashEmbedder(dim=1024)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    root.mkdir()
    (root / "db.md").write_text(DB_NOTE)
    (root / "bread.md").write_text(BREAD_NOTE)
    return root


def _doc(shelf: Shelf, rel: str) -> Document:
    return next(d for d in shelf.documents() if d.rel_path == rel)


# -- pure parts ------------------------------------------------------------------------------
def test_sentences_leave_markup_out() -> None:
    text = (
        "# Title\n\n- **Sections** are large, for *context*; see [[Other|the note]] and "
        "[the docs](http://x).\n\n```\nnot prose here.\n```\n| a | b |\nPlain text stays."
    )
    assert split_sentences(text) == [
        "Sections are large, for context; see the note and the docs.",
        "Plain text stays.",
    ]


@given(st.text())
def test_any_text_splits_into_one_line_sentences(text: str) -> None:
    for sentence in split_sentences(text):
        assert sentence and "\n" not in sentence and sentence == sentence.strip()


def _fake(file_type: str = "markdown", pages: int | None = None) -> Document:
    return Document(
        id="doc_x",
        sha256="x",
        title="X",
        path="/x",
        rel_path="x",
        source_id=None,
        source_host="h",
        file_type=file_type,
        size_bytes=1,
        added_at=0,
        updated_at=0,
        page_count=pages,
    )


def _chunks(headings: list[str], text: str = "Some words here.") -> list[Chunk]:
    return [
        Chunk(f"c{i}", "doc_x", Tier.SECTION, i, text, "", 0, 1, heading_path=(h,))
        for i, h in enumerate(headings)
    ]


@pytest.mark.parametrize(
    ("headings", "file_type", "pages", "text", "expected"),
    [
        (["Abstract", "1. Introduction", "References"], "pdf", 12, "x", "paper"),
        (["Chapter 1", "Chapter 2", "Chapter 3", "Chapter 4", "Chapter 5"], "pdf", 40, "x", "book"),
        (["Intro"], "pdf", 320, "x", "book"),
        (["Installation", "Usage", "Configuration"], "markdown", None, "x", "manual"),
        (["Executive summary", "Findings", "Recommendations"], "pdf", 20, "x", "report"),
        (["Call"], "text", None, "\n".join(f"ALICE: line {i}" for i in range(20)), "transcript"),
        (["Shopping"], "markdown", None, "Buy flour.", "note"),
        (["Essay"], "html", None, "word " * 3000, "article"),
    ],
)
def test_document_type_heuristic(
    headings: list[str], file_type: str, pages: int | None, text: str, expected: str
) -> None:
    got = guess_document_type(_fake(file_type, pages), _chunks(headings, text))
    assert got == expected and got in DOCUMENT_TYPES


# -- offline ---------------------------------------------------------------------------------
def _snippets(n: int, seed: int = 3) -> list[Chunk]:
    """``n`` snippets of three made-up sentences each, from a 300-word vocabulary."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(5)) for _ in range(300)]
    return [
        Chunk(
            f"s{i}",
            "doc_x",
            Tier.SNIPPET,
            i,
            " ".join(" ".join(rng.choices(vocab, k=9)).capitalize() + "." for _ in range(3)),
            "",
            0,
            1,
        )
        for i in range(n)
    ]


def _lexical_only(chunks: list[Chunk], settings: EnrichSettings = EnrichSettings()) -> Enrichment:
    return offline_enrichment(
        _fake(),
        chunks,
        snippet_vectors=None,
        embed=None,
        taxonomy=Taxonomy("t", []),
        concept_vectors=None,
        settings=settings,
    )


def test_a_short_note_is_summarised_as_before() -> None:
    """Lexical-only centrality computed once per document gives what the per-snippet
    computation gave (these figures are the old code's)."""
    e = _lexical_only(_snippets(40))
    assert [ids for _, ids in e.claims or ()] == [("s27",), ("s26",), ("s22",), ("s7",), ("s7",)]
    assert e.summary.startswith("Fffcg iehaj bbhfb ") and e.summary.endswith(" gdege.")


def test_a_long_document_is_enriched_from_a_bounded_share_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 3.5 MB note took 431 s (quadratic in its words) and held a worker, and every
    upload behind it, that long: the snippets looked at are capped, spread over the whole."""
    import docshelf.knowledge.enrich as enrich_mod

    chunks = _snippets(3000)
    seen: list[str] = []

    def counted(text: str) -> list[str]:
        seen.append(text)
        return lexical_terms(text)

    monkeypatch.setattr(enrich_mod, "lexical_terms", counted)
    e = _lexical_only(chunks)
    texts = {c.text for c in chunks}
    looked_at = {t for t in seen if t in texts}
    assert len(looked_at) == EnrichSettings().max_snippets < len(chunks)
    assert chunks[0].text in looked_at and chunks[-3].text in looked_at  # first to last
    assert e.summary and e.claims

    from docshelf.knowledge.enrich import considered

    assert considered(chunks, 10) == chunks[::300]
    assert considered(chunks[:5], 10) == chunks[:5]


def test_add_enriches_offline(shelf: Shelf, library: Path) -> None:
    # The threshold suits the real model's geometry; bag-of-words vectors score lower.
    shelf._enricher = Enricher(shelf, EnrichSettings(concept_threshold=0.15))
    shelf.add(library)
    db = _doc(shelf, "db.md")
    assert db.enrichment_mode == "offline" and db.enriched_at is not None
    assert db.document_type == "note"
    # Concepts by embedding similarity to the taxonomy's labels (HashEmbedder: shared words).
    assert db.concept_ids and db.concept_ids[0] == "databases"
    assert db.concept_source == "embedding" and db.category == "databases"
    # The summary is the document's own sentences.
    sentences = split_sentences(DB_NOTE)
    assert db.summary and set(split_sentences(db.summary)) <= set(sentences)
    # Distillates cite the snippets their sentence came from.
    claims = shelf.store.distillates_of(db.id)
    assert claims and all(c.mode == "offline" for c in claims)
    for claim in claims:
        [chunk] = shelf.store.get_chunks(list(claim.chunk_ids))
        assert chunk.document_id == db.id
        assert claim.text.split()[0] in chunk.text
    # The author's own tags win over derived concepts.
    bread = _doc(shelf, "bread.md")
    assert bread.concept_ids == ("food",) and bread.concept_source == "frontmatter"
    assert bread.category == "food"


def test_offline_concepts_stay_out_of_the_header(shelf: Shelf, library: Path) -> None:
    shelf._enricher = Enricher(shelf, EnrichSettings(concept_threshold=0.15))
    shelf.add(library)
    db = _doc(shelf, "db.md")
    assert db.concept_ids
    snippets = shelf.store.chunks_of_document(db.id, Tier.SNIPPET)
    assert all("[CONCEPTS" not in c.header for c in snippets)


def test_lexical_only_library_enriches_too(isolated_home: Path, library: Path) -> None:
    with Shelf(embedder=None) as shelf:
        shelf.add(library)
        db = _doc(shelf, "db.md")
        assert db.enrichment_mode == "offline" and db.summary
        assert db.concept_ids == () and db.category == GENERAL
        assert shelf.store.distillates_of(db.id)


def test_enrichment_off_leaves_it_pending(
    isolated_home: Path, library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_ENRICH", "off")
    with Shelf(embedder=HashEmbedder()) as shelf:
        shelf.add(library)
        assert all(d.enriched_at is None for d in shelf.documents())
        results = shelf.enrich()
        assert {r.document_id for r in results} == {d.id for d in shelf.documents()}
        assert all(d.enrichment_mode == "offline" for d in shelf.documents())


def test_enrichment_is_deterministic_and_cached(shelf: Shelf, library: Path) -> None:
    shelf.add(library)
    db = _doc(shelf, "db.md")
    first = shelf.store.distillates_of(db.id)
    again = shelf.enrich([db.id])
    assert again[0].cached and again[0].mode == "offline"
    assert shelf.store.distillates_of(db.id) == first
    assert _doc(shelf, "db.md").summary == db.summary


def test_the_cache_is_keyed_by_fingerprint(shelf: Shelf, library: Path, tmp_path: Path) -> None:
    shelf.add(library)
    summary = _doc(shelf, "db.md").summary
    shelf.remove(str(library))
    assert shelf.documents() == []
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    (copy / "same.md").write_text(DB_NOTE)
    calls = len(shelf.embedder.embedded)  # type: ignore[union-attr]
    shelf.add(copy)
    assert _doc(shelf, "same.md").summary == summary
    # Re-adding embedded nothing: vectors and the enrichment came from the caches.
    assert len(shelf.embedder.embedded) == calls  # type: ignore[union-attr]


def test_enrich_unknown_or_foreign_ids(shelf: Shelf, library: Path) -> None:
    shelf.add(library)
    with pytest.raises(NotFound):
        shelf.enrich(["doc_nope"])
    user, _ = shelf.create_user("mallory")
    with pytest.raises(NotFound):
        shelf.enrich([_doc(shelf, "db.md").id], user_id=user.id)


def test_distillates_are_searchable_per_user(shelf: Shelf, library: Path) -> None:
    shelf.add(library)
    found = shelf.distillates("write-ahead log replication")
    assert found and found[0][1].rel_path == "db.md"
    assert isinstance(shelf.distillates('"quoted -x path:"odd ('), list)  # any string is valid
    user, _ = shelf.create_user("eve")
    assert shelf.distillates("write-ahead log", user_id=user.id) == []
    by_doc = shelf.distillates(document_id=_doc(shelf, "db.md").id)
    assert [d.n for d, _ in by_doc] == list(range(len(by_doc)))


def test_a_changed_file_is_enriched_again(shelf: Shelf, library: Path) -> None:
    shelf.add(library)
    (library / "db.md").write_text(DB_NOTE + "\nVacuum reclaims space in the database files.\n")
    shelf.sync()
    db = _doc(shelf, "db.md")
    assert db.enrichment_mode == "offline"
    ids = {c.id for c in shelf.store.chunks_of_document(db.id, Tier.SNIPPET)}
    assert all(set(x.chunk_ids) <= ids for x in shelf.store.distillates_of(db.id))


# -- with an LLM -------------------------------------------------------------------------------
def _reply(**overrides: object) -> str:
    body: dict[str, object] = {
        "summary": "How to choose and back up a database.",
        "document_type": "note",
        "concepts": ["databases"],
        "claims": [{"text": "Backups must be tested by restoring them.", "sources": [1]}],
    }
    body.update(overrides)
    return json.dumps(body)


@pytest.fixture
def pending(isolated_home: Path, library: Path, monkeypatch: pytest.MonkeyPatch) -> Shelf:
    """A library indexed with enrichment off, so each test runs it its own way."""
    monkeypatch.setenv("DOCSHELF_ENRICH", "off")
    shelf = Shelf(embedder=HashEmbedder(dim=1024))
    shelf.add(library)
    monkeypatch.setenv("DOCSHELF_ENRICH", "auto")
    shelf.settings = type(shelf.settings).from_env()
    return shelf


def _with_llm(shelf: Shelf, url: str) -> None:
    shelf.llm = OpenAILLM(url, "fake-model", backoff=0.01, attempts=2, timeout=1.0)


def test_llm_enrichment_with_concepts_in_the_header(pending: Shelf) -> None:
    db = _doc(pending, "db.md")
    script = Script(("ok", "```json\n" + _reply() + "\n```"))
    before = pending.store.chunks_of_document(db.id, Tier.SNIPPET)
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        [result] = pending.enrich([db.id])
    assert result.mode == "llm" and result.llm_calls == 1 and result.notice is None
    assert result.prompt_tokens == 100 and result.completion_tokens == 20
    db = _doc(pending, "db.md")
    assert db.summary == "How to choose and back up a database."
    assert db.concept_ids == ("databases",) and db.concept_source == "llm"
    assert db.enrichment_mode == "llm"
    # The concept flows into the retrieval header; only this document was re-embedded.
    after = pending.store.chunks_of_document(db.id, Tier.SNIPPET)
    assert [c.id for c in after] == [c.id for c in before]
    assert all("[CONCEPTS: Databases]" in c.header for c in after)
    assert result.reembedded == len(after)
    assert _doc(pending, "bread.md").enriched_at is None
    # Claims cite the excerpt they came from, mapped to its chunk id.
    [claim] = pending.store.distillates_of(db.id)
    assert claim.mode == "llm" and claim.chunk_ids[0] in {c.id for c in after}
    # The prompt named the allowed types and concepts.
    prompt = script.requests[0]["messages"][1]["content"]
    assert "databases: Databases" in prompt and "paper" in prompt and "[1]" in prompt
    hits = pending.search("database backup restore", filters=None).hits
    assert hits and hits[0].document.id == db.id


@pytest.mark.parametrize(
    "bad",
    [
        "this is not JSON at all",
        '{"summary": "x", "document_type": "novel"}',
        _reply(concepts=["no-such-concept"]),
        _reply(claims=[{"text": "Invented.", "sources": [9]}]),
        '{"summary": ""}',
    ],
)
def test_invalid_reply_is_retried_with_the_problem(pending: Shelf, bad: str) -> None:
    script = Script(("ok", bad), ("ok", _reply()))
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        [result] = pending.enrich([_doc(pending, "db.md").id])
    assert result.mode == "llm" and result.llm_calls == 2
    retry = script.requests[1]["messages"][1]["content"]
    assert "previous reply was not valid" in retry


def test_hopeless_replies_fall_back_offline(pending: Shelf) -> None:
    script = Script(("ok", "nope"), ("ok", "still nope"))
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        [result] = pending.enrich([_doc(pending, "db.md").id])
    assert result.mode == "offline" and result.notice and "invalid" in result.notice
    assert _doc(pending, "db.md").enrichment_mode == "offline"
    # A fallback is not cached as the LLM's answer: the next run asks again.
    script2 = Script(("ok", _reply()))
    with fake_llm_server(script2) as url:
        _with_llm(pending, url)
        [again] = pending.enrich([_doc(pending, "db.md").id])
    assert again.mode == "llm" and not again.cached


@pytest.mark.parametrize("failure", [("status", 429), ("status", 503), ("sleep", 1.5)])
def test_server_failures_fall_back_offline(pending: Shelf, failure: tuple[str, object]) -> None:
    script = Script(failure, failure, failure)
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        [result] = pending.enrich([_doc(pending, "db.md").id])
    assert result.mode == "offline" and result.notice and "LLM failed" in result.notice
    assert _doc(pending, "db.md").summary


def test_llm_results_are_cached(pending: Shelf) -> None:
    db = _doc(pending, "db.md")
    script = Script(("ok", _reply()))
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        pending.enrich([db.id])
        [again] = pending.enrich([db.id])
    assert again.cached and again.mode == "llm" and len(script.requests) == 1


def test_offline_setting_never_calls_the_llm(pending: Shelf) -> None:
    pending.settings = type(pending.settings)(**{**pending.settings.__dict__, "enrich": "offline"})
    script = Script(("ok", _reply()))
    with fake_llm_server(script) as url:
        _with_llm(pending, url)
        [result] = pending.enrich([_doc(pending, "db.md").id])
    assert result.mode == "offline" and script.requests == []


# -- the queue -----------------------------------------------------------------------------------
def test_pending_queue_claims_each_document_once(pending: Shelf) -> None:
    ids = {d.id for d in pending.documents()}
    done = pending.enrich_pending()
    assert {r.document_id for r in done} == ids
    assert pending.enrich_pending() == []
    assert pending.store.reset_enrichment([next(iter(ids))]) == 1
    assert len(pending.enrich_pending()) == 1
    events = pending.store.events_after(0, kinds="document.enriched")
    assert len(events) == len(ids) + 1


def test_a_failing_document_is_marked_not_retried_forever(
    pending: Shelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(document_id: str) -> None:
        raise RuntimeError("enricher bug")

    monkeypatch.setattr(pending.enricher, "enrich", boom)
    assert pending.enrich_pending() == []
    docs = pending.documents()
    assert all(d.enrichment_mode == "failed" for d in docs)
    assert pending.store.claim_enrichment(time.time(), 60, "w1") is None


# -- faces and the worker ----------------------------------------------------------------------
def test_worker_enriches_uploads_when_idle(shelf: Shelf) -> None:
    from docshelf.ingest.worker import Worker

    user, _ = shelf.create_user("alice")
    up = shelf.upload(user.id, "db.md", DB_NOTE.encode())
    worker = Worker(shelf, name="w")
    assert worker.run_once()  # ingest first
    assert shelf.document(up.document_id).document.enriched_at is None
    assert not worker.run_once() and worker.enrich_one()
    doc = shelf.document(up.document_id, user.id).document
    assert doc.enrichment_mode == "offline" and doc.summary
    kinds = [e.kind for e in shelf.events(user_id=user.id, lifecycle=True)]
    assert kinds[-2:] == ["document.completed", "document.enriched"]
    assert not worker.enrich_one()


def test_api_enrich_and_distillates(shelf: Shelf, library: Path) -> None:
    from fastapi.testclient import TestClient

    from docshelf.api import create_app

    shelf.add(library)
    db = _doc(shelf, "db.md")
    _, alice_token = shelf.create_user("alice")
    admin_token = shelf.local_admin_token()
    assert admin_token
    with TestClient(create_app(shelf)) as client:
        admin = {"Authorization": f"Bearer {admin_token}"}
        other = {"Authorization": f"Bearer {alice_token}"}
        r = client.post(f"/v1/documents/{db.id}/enrich", headers=admin)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["mode"] == "offline" and body["cached"] and body["distillates"] > 0
        # Another user's document is answered exactly like an unknown one.
        for who in (other, admin):
            assert client.post("/v1/documents/doc_nope/enrich", headers=who).status_code == 404
        assert client.post(f"/v1/documents/{db.id}/enrich", headers=other).status_code == 404
        r = client.get("/v1/distillates", params={"q": "write-ahead log"}, headers=admin)
        assert r.status_code == 200 and r.json()["distillates"][0]["document_id"] == db.id
        assert client.get(
            "/v1/distillates", params={"q": "write-ahead log"}, headers=other
        ).json() == {"distillates": []}
        r = client.get("/v1/distillates", params={"document_id": db.id}, headers=other)
        assert r.status_code == 404
        for hostile in ('"', "-", "tag:", "(((", "\x00", "a" * 1999):
            r = client.get("/v1/distillates", params={"q": hostile}, headers=admin)
            assert r.status_code in (200, 400), (hostile, r.text)
        neither = client.get("/v1/distillates", headers=admin)  # schema-valid: not refused
        assert neither.status_code == 200 and neither.json()["distillates"] == []
        assert "notice" in neither.json()
        assert (
            client.get("/v1/distillates", params={"q": "x", "limit": 0}, headers=admin).status_code
            == 400
        )
        r = client.post("/v1/enrich", headers=admin)
        assert r.status_code == 202 and r.json() == {"queued": 2}
        assert all(d.enriched_at is None for d in shelf.documents())
        assert client.post("/v1/enrich", headers=other).json() == {"queued": 0}
        doc = client.get(f"/v1/documents/{db.id}", headers=admin).json()
        assert {"summary", "document_type", "category", "distillates"} <= set(doc)


def test_cli_enrich_and_distillates(library: Path) -> None:
    from typer.testing import CliRunner

    from docshelf.cli import app

    runner = CliRunner()

    def run(*args: str) -> dict[str, object]:
        result = runner.invoke(app, ["--json", *args], env={"DOCSHELF_EMBEDDER": "none"})
        return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    assert run("add", str(library))["ok"]
    listed = run("list")["result"]
    docs = listed["documents"]  # type: ignore[index]
    assert all(d["document_type"] and d["summary"] for d in docs)
    status = run("status")
    assert status["result"]["enrichment"] == {"offline": 2}  # type: ignore[index]
    env = run("enrich", "--all")
    assert env["ok"] and len(env["result"]["documents"]) == 2  # type: ignore[index]
    assert all(d["cached"] for d in env["result"]["documents"])  # type: ignore[index]
    env = run("enrich")
    assert not env["ok"] and env["error"]["code"] == "invalid_input"  # type: ignore[index]
    env = run("enrich", "doc_unknown")
    assert not env["ok"] and env["error"]["code"] == "not_found"  # type: ignore[index]
    env = run("distillates", "dough starter")
    found = env["result"]["distillates"]  # type: ignore[index]
    assert found and found[0]["title"] == "Bread" and env["next_actions"]
    env = run("show", found[0]["document_id"])
    assert env["result"]["distillates"]  # type: ignore[index]


def test_enrich_all_skips_documents_not_indexed_yet(shelf: Shelf, library: Path) -> None:
    shelf.add(library)
    user, _ = shelf.create_user("alice")
    queued = shelf.upload(user.id, "later.md", b"# Later\n\nNot processed yet.\n")
    done = {r.document_id for r in shelf.enrich()}
    assert queued.document_id not in done and len(done) == 2


def _long_document(shelf: Shelf, sections: int, per_section: int) -> Document:
    """A complete document of ``sections`` sections of ``per_section`` snippets each, put
    straight into the store, its concept the author's (``manual``) but not yet in its
    chunks' headers: enrichment must re-head every chunk."""
    from docshelf.chunk import build_header
    from docshelf.model import chunk_id, document_id

    fp = "f" * 64
    doc = Document(
        id=document_id(fp),
        sha256=fp,
        title="Long",
        path="/long.md",
        rel_path="long.md",
        source_id=None,
        source_host="h",
        file_type="markdown",
        size_bytes=1,
        added_at=1.0,
        updated_at=1.0,
        concept_ids=("databases",),
        concept_source="manual",
    )
    rng = random.Random(7)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(5)) for _ in range(300)]
    chunks: list[Chunk] = []
    for s in range(sections):
        path = (f"Part {s}",)
        header = build_header("Long", path, (), 48)
        section_id = chunk_id(fp, Tier.SECTION, s)
        chunks.append(Chunk(section_id, doc.id, Tier.SECTION, s, "x", header, 0, 1, path))
        for k in range(per_section):
            text = " ".join(rng.choices(vocab, k=12)).capitalize() + "."
            i = s * per_section + k
            chunks.append(
                Chunk(
                    chunk_id(fp, Tier.SNIPPET, i),
                    doc.id,
                    Tier.SNIPPET,
                    i,
                    text,
                    header,
                    0,
                    1,
                    path,
                    parent_id=section_id,
                )
            )
    with shelf.store.transaction():
        shelf.store.put_document(doc, chunks, None)
    got = shelf.store.get_document(doc.id)
    assert got is not None
    return got


def test_a_long_document_is_enriched_a_page_of_chunks_at_a_time(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: enrichment loaded every chunk of a document, and re-headed it whole — a
    24.8 MB note's 60,845 chunks, 240 MB. Now it holds a page of chunks and the snippets
    it considers, whatever the document's length: counted here by the chunks the store
    makes that are alive at once."""
    import weakref

    import docshelf.knowledge.enricher as enricher_mod
    import docshelf.store.sql.documents as documents_sql
    from docshelf.store.rows import chunk_from_row as made

    page, considered = 50, 100
    monkeypatch.setattr(enricher_mod, "PAGE_CHUNKS", page, raising=False)
    alive = [0, 0]  # now, the most at once

    def gone() -> None:
        alive[0] -= 1

    def counted(*args: Any) -> Chunk:
        chunk = made(*args)
        alive[0] += 1
        alive[1] = max(alive[1], alive[0])
        weakref.finalize(chunk, gone)
        return chunk

    with Shelf(embedder=HashEmbedder(dim=64)) as shelf:
        doc = _long_document(shelf, sections=60, per_section=50)  # 3,060 chunks
        shelf._enricher = Enricher(shelf, EnrichSettings(max_snippets=considered))
        monkeypatch.setattr(documents_sql, "chunk_from_row", counted)
        [result] = shelf.enrich([doc.id])
        monkeypatch.setattr(documents_sql, "chunk_from_row", made)
        # at most two pages (one read while the last is held) and the considered snippets
        assert 0 < alive[1] <= 2 * page + considered
        assert result.mode == "offline" and result.reembedded == 3000
        assert result.enrichment.summary and result.enrichment.claims
        after = shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)
        assert [c.index for c in after] == list(range(3000))
        assert all(c.header.endswith("\n[CONCEPTS: Databases]") for c in after)
        sections = shelf.store.chunks_of_document(doc.id, Tier.SECTION)
        assert len(sections) == 60 and all("[CONCEPTS: Databases]" in c.header for c in sections)
        assert len(shelf.store.get_vectors([c.id for c in after])) == 3000
        assert shelf.store.check() == []
        # enriched again: the headers hold the concept already, nothing is re-headed
        assert shelf.enrich([doc.id])[0].reembedded == 0
