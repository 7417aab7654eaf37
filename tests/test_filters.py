"""The one filter vocabulary (search/filters.py) and the faces that speak it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import configured_taxonomy
from docshelf.search.filters import (
    DATE_PATTERN,
    FILTER_KEYS,
    SEARCH_MODES,
    SearchFilters,
    concept_group,
    date_range,
    with_query_fields,
)
from docshelf.search.filters_model import Filters
from docshelf.search.query import parse_query
from docshelf.shelf import Shelf


def test_the_vocabulary_and_the_modes() -> None:
    assert FILTER_KEYS == ("source", "path", "type", "doctype", "tag", "concept", "date")
    assert SEARCH_MODES == ("hybrid", "lexical", "vector")
    assert tuple(Filters.model_fields) == FILTER_KEYS


def test_key_value_strings_parse_and_repeat() -> None:
    given = Filters.parse(["tag=a", "tag=#b", "type=pdf", "type=text", "concept=Food"])
    assert given == Filters(tag=["a", "#b"], type="text", concept=["Food"])
    store = given.to_search_filters(configured_taxonomy())
    assert store.tags == ("a", "b") and store.file_type == "text"
    assert store.concept_groups == (concept_group(configured_taxonomy(), "Food"),)
    assert "food" in store.concept_groups[0]
    for bad in ("tag", "tag=", "colour=red", "Tag=x"):
        keys = "KEY one of source, path, type, doctype, tag, concept, date"
        with pytest.raises(InvalidInput, match=keys):
            Filters.parse([bad])


def test_a_mapping_takes_strings_or_lists_and_names_unknown_keys() -> None:
    assert Filters.from_mapping({"tag": "x", "concept": ["a", "b"], "path": None}) == Filters(
        tag=["x"], concept=["a", "b"]
    )
    assert Filters.from_mapping({"tag": "x", "type": "pdf"}).as_json() == {
        "type": "pdf",
        "tag": ["x"],
    }
    with pytest.raises(ValueError, match="Unknown filter colour, size"):
        Filters.from_mapping({"size": 1, "colour": "red"})
    with pytest.raises(ValueError, match="Bad filters"):
        Filters.from_mapping({"source": ["a", "b"]})


def test_type_and_doctype_are_told_apart_and_an_unknown_value_is_refused() -> None:
    """``type:article`` once matched nothing, silently: article is a document type."""
    taxonomy = configured_taxonomy()
    given = Filters.parse(["type=md", "doctype=paper"])
    assert given.type == "markdown" and given.doctype == "paper"
    store = given.to_search_filters(taxonomy)
    assert store.file_type == "markdown" and store.document_type == "paper"
    with pytest.raises(InvalidInput, match=r"Unknown file type 'article'.*use doctype:article"):
        Filters.parse(["type=article"])
    with pytest.raises(InvalidInput, match=r"Unknown document type 'pdf'.*use type:pdf"):
        Filters.parse(["doctype=pdf"])
    with pytest.raises(
        ValueError, match="file types are docx, html, image, markdown, pdf, rst, text"
    ):
        Filters.from_mapping({"type": "spreadsheet"})
    with pytest.raises(InvalidInput, match="Unknown file type 'article'"):
        parse_query("bigtable type:article")
    parsed = parse_query("bigtable doctype:paper type:PDF")
    assert parsed.fields == (("document_type", "paper"), ("file_type", "pdf"))
    merged = with_query_fields(SearchFilters(), parsed.fields, None, taxonomy)
    assert merged.document_type == "paper" and not merged.empty


def test_an_unknown_concept_matches_nothing_rather_than_everything() -> None:
    assert concept_group(configured_taxonomy(), "no-such-thing") == ("no-such-thing",)


def test_query_syntax_reads_the_same_names() -> None:
    parsed = parse_query(
        "flour TAG:x tag:#y Type:pdf concept:Food path:notes/ source:s1 colour:red"
    )
    assert parsed.text == "flour colour:red"
    assert parsed.fields == (
        ("tags", "x"),
        ("tags", "y"),
        ("file_type", "pdf"),
        ("concepts", "Food"),
        ("path_prefix", "notes/"),
        ("source_id", "s1"),
    )
    merged = with_query_fields(
        SearchFilters(tags=("a",), file_type="text", source_id="s0"),
        parsed.fields,
        "usr_1",
        configured_taxonomy(),
    )
    assert merged.tags == ("a", "x", "y") and merged.file_type == "pdf"
    assert merged.source_id == "s1" and merged.path_prefix == "notes/"
    assert merged.user_id == "usr_1" and len(merged.concept_groups) == 1


def test_every_face_offers_every_filter() -> None:
    pytest.importorskip("fastapi")
    from docshelf.api import routes

    assert routes.SearchRequest.model_fields["filters"].annotation is Filters
    mcp_server = pytest.importorskip("docshelf.integrations.mcp_server")
    assert set(FILTER_KEYS) <= set(mcp_server.SearchFiltersArg.model_fields)
    old_name = mcp_server.SearchFiltersArg(tags=["a"], tag=["b"])
    assert old_name.to_search_filters(configured_taxonomy()).tags == ("b", "a")


def test_a_tag_or_concept_may_be_one_string_in_every_face(shelf: Shelf, notes: Path) -> None:
    """Issue 42: "`filters.tag` as a plain string is rejected". The shared model takes one
    string as a list of one, and its schema says so: the HTTP body and the MCP tool alike."""
    assert Filters.model_validate({"tag": "#a", "concept": "Food"}) == Filters(
        tag=["#a"], concept=["Food"]
    )
    properties = Filters.model_json_schema()["properties"]
    for key in ("tag", "concept"):
        assert properties[key]["anyOf"] == [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
        ]
    mcp_server = pytest.importorskip("docshelf.integrations.mcp_server")
    old_name = mcp_server.SearchFiltersArg.model_validate({"tags": "#a", "tag": "b"})
    assert old_name.to_search_filters(configured_taxonomy()).tags == ("b", "a")
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docshelf.api import create_app

    alice, token = shelf.create_user("alice")
    shelf.add(notes, user_id=alice.id)
    with TestClient(create_app(shelf)) as client:
        found = {}
        for tag in ("baking", ["baking"]):
            body = {"query": "flour", "filters": {"tag": tag}}
            r = client.post("/v1/search", json=body, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200, r.text
            found[str(tag)] = [h["citation"]["label"] for h in r.json()["hits"]]
        assert found["baking"] == found["['baking']"] == ["Bread (cooking.md#0)"]


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_a_date_is_a_year_or_a_month_or_a_range_of_them() -> None:
    assert date_range("2026") == (_utc("2026-01-01"), _utc("2027-01-01"))
    assert date_range("2026-02") == (_utc("2026-02-01"), _utc("2026-03-01"))
    assert date_range("2026-12") == (_utc("2026-12-01"), _utc("2027-01-01"))
    assert date_range("2025..2026-03") == (_utc("2025-01-01"), _utc("2026-04-01"))
    assert date_range("2026-03..2025") == (_utc("2025-01-01"), _utc("2026-04-01"))
    assert date_range("2025-06..") == (_utc("2025-06-01"), None)
    assert date_range("..2025") == (None, _utc("2026-01-01"))
    assert date_range("..") == (None, None)
    # Every year the pattern admits, where the calendar module would give up.
    assert date_range("0000")[1] == _utc("0001-01-01")
    assert date_range("9999-12") == (_utc("9999-12-01"), _utc("9999-12-31") + 86400)
    assert date_range("1900-02") == (_utc("1900-02-01"), _utc("1900-03-01"))
    assert date_range("2024-02") == (_utc("2024-02-01"), _utc("2024-03-01"))
    for bad in ("", "26", "2026-13", "2026-00", "2026-1", "2026-03-05", " 2026", "soon", "2026..."):
        with pytest.raises(InvalidInput, match="Bad date"):
            date_range(bad)


def test_the_date_filter_in_every_spelling() -> None:
    taxonomy = configured_taxonomy()
    given = Filters.parse(["date=2026-03"]).to_search_filters(taxonomy)
    assert (given.dated_from, given.dated_before) == (_utc("2026-03-01"), _utc("2026-04-01"))
    assert not given.empty
    parsed = parse_query("raft date:2025")
    assert parsed.text == "raft" and parsed.fields == (("dated", "2025"),)
    merged = with_query_fields(given, parsed.fields, None, taxonomy)
    assert (merged.dated_from, merged.dated_before) == (_utc("2025-01-01"), _utc("2026-01-01"))
    kept = with_query_fields(given, (), None, taxonomy)
    assert kept.dated_from == given.dated_from
    with pytest.raises(InvalidInput, match="Bad date 'soon'"):
        parse_query("raft date:soon")
    with pytest.raises(ValueError, match="Bad date"):
        Filters.from_mapping({"date": "2026-99"})
    assert re.fullmatch(DATE_PATTERN, "2024..2025-06") and not re.fullmatch(DATE_PATTERN, "2026-9")


def test_filetype_is_the_file_type_named_apart_from_doctype() -> None:
    assert Filters.parse(["filetype=md"]).type == "markdown"
    assert Filters.from_mapping({"filetype": "pdf"}).as_json() == {"type": "pdf"}
    assert Filters.model_validate({"filetype": "rst"}).type == "rst"
    assert parse_query("x filetype:PDF").fields == (("file_type", "pdf"),)
    with pytest.raises(ValueError, match="type or filetype, not both"):
        Filters.model_validate({"type": "pdf", "filetype": "rst"})
    with pytest.raises(InvalidInput, match="use doctype:paper"):
        Filters.parse(["filetype=paper"])
