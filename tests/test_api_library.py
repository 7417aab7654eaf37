"""The library over HTTP: facets of the whole library (``/v1/facets``), the document list
narrowed, sorted and counted exactly, failures with their reasons, "Open in Obsidian"
links, and a bad filter answered in a short message that names the known values."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient

from docshelf import views
from docshelf.api import create_app
from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput
from docshelf.parse import parse
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder
from tests.fixtures_formats import encrypted_pdf, paged_pdf
from tests.test_api import Api, drain

YEAR_2024 = 1_710_000_000  # 2024-03-09 UTC


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


@pytest.fixture
def alice(shelf: Shelf, client: TestClient, notes: Path) -> Api:
    """Alice's library: the notes vault (raft.md changed in 2024), a PDF-free upload that
    works and one that fails."""
    os.utime(notes / "projects" / "raft.md", (YEAR_2024, YEAR_2024))
    user, token = shelf.create_user("alice")
    shelf.add(notes, user_id=user.id)
    api = Api(client, token, user)
    assert api.upload("minutes.md", b"# Minutes\n\nWe chose Raft. " + FILLER.encode()).is_success
    assert api.upload("broken.md", b"# Broken\n\nnot UTF-8: \xff\xfe\n").is_success
    drain(shelf)
    return api


@pytest.fixture
def bob(shelf: Shelf, client: TestClient, tmp_path: Path) -> Api:
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "secret.rst").write_text("Secret\n======\n\nBob's plans. " + FILLER + "\n")
    user, token = shelf.create_user("bob")
    shelf.add(folder, user_id=user.id)
    return Api(client, token, user)


def facets(api: Api, **params: Any) -> dict[str, Any]:
    r = api.get("/v1/facets", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_facets_count_the_callers_whole_library_before_any_query(alice: Api, bob: Api) -> None:
    mine = facets(alice)
    assert mine["total"] == 5  # three notes, two uploads; none of Bob's
    assert mine["facets"]["type"] == {"markdown": 4, "text": 1}
    assert mine["facets"]["tag"] == {"baking": 1, "food": 1}
    assert mine["facets"]["concept"] == {"food": 1}
    assert mine["labels"]["concept"] == {"food": "Food and cooking"}
    assert mine["facets"]["date"]["2024"] == 1  # raft.md: its file's last change
    assert sum(mine["facets"]["date"].values()) == 5
    [(source, n)] = mine["facets"]["source"].items()
    assert n == 3 and mine["labels"]["source"][source].endswith("notes")
    assert facets(bob)["facets"]["type"] == {"rst": 1}


def test_a_chosen_facet_keeps_its_other_values_and_narrows_the_rest(alice: Api) -> None:
    text = facets(alice, type="text")
    assert text["total"] == 1
    assert text["facets"]["type"] == {"markdown": 4, "text": 1}  # still choosable
    assert text["facets"]["tag"] == {} and text["facets"]["date"] != {}
    old = facets(alice, date="..2024")
    assert old["total"] == 1 and old["facets"]["type"] == {"markdown": 1}
    assert sum(old["facets"]["date"].values()) == 5  # the year facet is not narrowed by itself
    both = facets(alice, tag=["baking", "food"], type="md")
    assert both["total"] == 1 and both["filters"] == {"type": "markdown", "tag": ["baking", "food"]}
    assert facets(alice, tag="nothing")["total"] == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"type": "article"}, "Unknown file type 'article'; file types are docx, html"),
        ({"type": "article"}, "use doctype:article"),
        ({"doctype": "pdf"}, "Unknown document type 'pdf'; document types are paper"),
        ({"date": "last week"}, "Bad date 'last week'; use YYYY or YYYY-MM"),
        ({"colour": "red"}, "Unknown query parameter 'colour'"),
    ],
)
def test_a_bad_filter_is_a_short_message_naming_the_known_values(
    alice: Api, params: dict[str, str], message: str
) -> None:
    for path in ("/v1/facets", "/v1/documents"):
        r = alice.get(path, params=params)
        assert r.status_code == 400 and message in r.json()["error"]["message"], r.text


def test_a_bad_filter_in_a_search_body_reads_as_the_cli_s_message(alice: Api) -> None:
    body = {"query": "raft", "filters": {"type": "article"}}
    r = alice.request("POST", "/v1/search", json=body)
    assert r.status_code == 400
    message = r.json()["error"]["message"]
    assert message == (
        "filters.type: Unknown file type 'article'; file types are docx, html, image, markdown, "
        "pdf, rst, text; for the document type, use doctype:article"
    )
    r = alice.request("POST", "/v1/search", json={"query": "raft", "filters": {"date": "1.1."}})
    assert r.status_code == 400 and "Value error" not in r.text
    assert r.json()["error"]["message"].startswith("filters.date: Bad date '1.1.'")
    found = alice.request("POST", "/v1/search", json={"query": "raft", "filters": {"date": "2024"}})
    assert found.status_code == 200
    assert {h["citation"]["path"].rsplit("/", 1)[-1] for h in found.json()["hits"]} == {"raft.md"}


def titles(api: Api, **params: Any) -> tuple[list[str], dict[str, Any]]:
    r = api.get("/v1/documents", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return [d["title"] for d in body["documents"]], body


def test_the_list_is_found_filtered_sorted_and_counted_exactly(alice: Api, bob: Api) -> None:
    listed, body = titles(alice)
    assert len(listed) == 5 and body["total"] == 5 and body["library_total"] == 5
    assert titles(alice, q="RAFT")[0] == ["Raft"]
    assert titles(alice, q="projects/")[0] == ["Raft"]  # words of the path count too
    assert titles(alice, type="text")[0] == ["todo"]
    assert titles(alice, sort="title")[0] == sorted(listed, key=str.lower)
    assert titles(alice, sort="size")[0][0] == "Raft"  # the largest first
    page, body = titles(alice, sort="title", limit=2, offset=1)
    assert page == sorted(listed, key=str.lower)[1:3]
    assert body["total"] == 5 and body["library_total"] == 5
    narrowed, body = titles(alice, q="zzz")
    assert narrowed == [] and body["total"] == 0 and body["library_total"] == 5
    assert titles(bob, q="raft")[0] == []  # Alice's documents are not Bob's
    r = alice.get("/v1/documents", params={"sort": "colour"})
    assert r.status_code == 400


def test_failures_are_listed_with_their_reason_and_whether_a_retry_can_help(
    alice: Api, notes: Path, shelf: Shelf
) -> None:
    failed, body = titles(alice, status="failed")
    assert failed == ["broken"] and body["total"] == 1
    [doc] = body["documents"]
    assert doc["error"].startswith("invalid UTF-8") and doc["retryable"] is False
    assert alice.upload("blob.md", b"\x00\x01\x02 binary").is_success
    drain(shelf)
    _, body = titles(alice, status="failed", sort="title")
    blob = next(d for d in body["documents"] if d["title"] == "blob")
    assert "binary content" in blob["error"] and blob["retryable"] is False
    r = alice.request("POST", f"/v1/documents/{blob['id']}/retry")
    assert r.status_code == 409  # no retry where none can help
    assert all(d["status"] == "complete" for d in titles(alice, status="complete")[1]["documents"])


def test_a_locked_pdf_is_retried_once_the_server_has_a_password(
    isolated_home: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a password the same lock meets every retry; the error says to set one, and
    # after a restart with it, Retry opens the upload (no need to send it again).
    with Shelf(isolated_home, embedder=embedder) as shelf, TestClient(create_app(shelf)) as c:
        user, token = shelf.create_user("alice")
        alice = Api(c, token, user)
        doc_id = alice.upload("sealed.pdf", encrypted_pdf("hunter2")).json()["document_id"]
        drain(shelf)
        job = alice.get(f"/v1/documents/{doc_id}").json()["job"]
        assert "DOCSHELF_PDF_PASSWORD" in job["last_error"] and job["retryable"] is False
        assert alice.request("POST", f"/v1/documents/{doc_id}/retry").status_code == 409

    monkeypatch.setenv("DOCSHELF_PDF_PASSWORD", "hunter2")
    with Shelf(isolated_home, embedder=embedder) as shelf, TestClient(create_app(shelf)) as c:
        alice = Api(c, token, user)
        assert alice.get(f"/v1/documents/{doc_id}").json()["job"]["retryable"] is True
        assert alice.get("/v1/documents").json()["documents"][0]["retryable"] is True
        r = alice.request("POST", f"/v1/documents/{doc_id}/retry")
        assert r.status_code == 202, r.text
        drain(shelf)
        assert alice.get(f"/v1/documents/{doc_id}").json()["status"] == "complete"
        hits = alice.request("POST", "/v1/search", json={"query": "sealed text"}).json()["hits"]
        assert [h["document_id"] for h in hits] == [doc_id]


def test_a_vault_note_opens_in_obsidian_and_nothing_else_does(
    alice: Api, shelf: Shelf, tmp_path: Path
) -> None:
    _, body = titles(alice, sort="path")
    links = {d["title"]: d["obsidian"] for d in body["documents"]}
    assert links["Minutes"] is None  # an upload
    assert links["todo"] is None  # not a note
    raft = next(d for d in body["documents"] if d["title"] == "Raft")
    uri = urlparse(raft["obsidian"])
    assert uri.scheme == "obsidian" and uri.netloc == "open"
    assert parse_qs(uri.query) == {"vault": ["notes"], "file": ["projects/raft.md"]}
    assert "projects%2Fraft.md" in raft["obsidian"]  # the path encoded whole
    assert alice.get(f"/v1/documents/{raft['id']}").json()["obsidian"] == raft["obsidian"]
    chunk = shelf.document(raft["id"]).sections[0].id
    view = alice.get(f"/v1/documents/{raft['id']}/view", params={"chunk": chunk}).json()
    assert view["obsidian"] == raft["obsidian"]

    plain = tmp_path / "plain folder"  # no .obsidian/: not a vault
    plain.mkdir()
    (plain / "note & more.md").write_text("# Plain\n\nNot a vault. " + FILLER + "\n")
    shelf.add(plain, user_id=alice.user.id)
    _, body = titles(alice, q="Plain")
    assert [d["obsidian"] for d in body["documents"]] == [None]
    (plain / ".obsidian").mkdir()  # now it is one, named with a space
    _, body = titles(alice, q="Plain")
    [uri_text] = [d["obsidian"] for d in body["documents"]]
    assert parse_qs(urlparse(uri_text).query) == {
        "vault": ["plain folder"],
        "file": ["note & more.md"],
    }
    assert " " not in uri_text and "&file=note%20%26%20more.md" in uri_text


@pytest.mark.parametrize(
    ("reason", "can_help"),
    [
        ("binary content (NUL bytes)", False),
        ("invalid UTF-8 at byte 31", False),
        ("no text layer on any of 3 pages (scanned?)", False),
        ("no readable text on any of 2 pages: 2 with an unreadable text layer", False),
        ("malformed PDF: none of its 4 pages can be loaded", False),
        ("encrypted (password required; set DOCSHELF_PDF_PASSWORD to open it)", False),
        ("encrypted with an unsupported security handler", False),
        ("truncated PDF (no %%EOF marker at the end of the file)", False),
        ("pdf parser crashed (signal 11)", False),
        ("pdf parser exceeded the 60 s time limit", True),
        ("pdf parser exceeded the 1024 MB memory limit", True),
        ("pdf parser was killed (over the 1024 MB memory limit?)", True),
        ("ConnectionError: the embedding service is unavailable (after 5 attempts)", True),
        ("OperationalError: database is locked (after 5 attempts)", True),
        ("database or disk is full", True),
        ("unreadable: Permission denied", True),
        ("source folder is missing or unreadable", True),
        (None, True),
    ],
)
def test_retry_is_offered_only_where_it_can_help(reason: str | None, can_help: bool) -> None:
    assert views.retryable(reason) is can_help


@pytest.mark.parametrize(
    ("reason", "with_password"),
    [
        ("encrypted (password required; set DOCSHELF_PDF_PASSWORD to open it)", True),
        ("encrypted (DOCSHELF_PDF_PASSWORD does not open it)", True),  # it may have changed
        ("encrypted with an unsupported security handler", False),
        ("truncated PDF (no %%EOF marker at the end of the file)", False),
        ("invalid UTF-8 at byte 31", False),
    ],
)
def test_a_password_on_the_server_helps_a_locked_pdf_only(reason: str, with_password: bool) -> None:
    assert views.retryable(reason) is False
    assert views.retryable(reason, pdf_password=True) is with_password


@pytest.mark.parametrize(
    ("file_type", "data"),
    [
        ("markdown", b"\x00\x01\x02 binary"),
        ("markdown", b"# Broken\n\nnot \xff\xfe utf-8\n"),
        ("pdf", paged_pdf([["A paper cut off halfway through."]])[:400]),
        ("pdf", encrypted_pdf()),
        ("pdf", b"%PDF-1.4\n" + b"x" * 200 + b"\n%%EOF\n"),
    ],
)
def test_what_the_bytes_decide_is_never_offered_a_retry(file_type: str, data: bytes) -> None:
    # The reasons as the parsers word them, not as a test spells them.
    with pytest.raises(InvalidInput) as failed:
        parse(data, file_type, ParseLimits())
    assert views.retryable(failed.value.message) is False, failed.value.message
