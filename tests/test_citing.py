"""A packed snippet cited by the heading its matching text sits under (issue 15, design
(b)): the chunker keeps its inner headings' places, both stores keep them, a search cites
each hit under the inner heading whose part holds most of the query's words (ties: the
snippet's own heading), one hit per cited (file, heading), and every face opens at it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.catalogue import reindex_due
from docshelf.chunk import CHUNKER_META, CHUNKER_VERSION, ChunkSettings, chunk_document
from docshelf.model import (
    Block,
    BlockKind,
    Chunk,
    Document,
    InnerHeading,
    ParsedDocument,
    Tier,
    chunk_id,
    document_id,
)
from docshelf.parse import parse
from docshelf.search.citing import cited_under, query_words
from docshelf.search.engines import own_engines
from docshelf.shelf import Shelf
from docshelf.store import SearchStore, Store, open_store, postgres_schema, sqlite_schema
from docshelf.store.rows import DOCUMENT_COLUMNS, DOCUMENT_FIELDS, document_row

AWARDS = (
    "# Awards\n\n"
    "## Winner\n\nAlice won with forty points.\n\n"
    "## Runners-up\n\nBob received twelve credits and Carol nine credits.\n\n"
    "## Judges\n\nThree judges scored every entry.\n"
)
FP = "ab" * 32


def packed(settings: ChunkSettings | None = None) -> ChunkSettings:
    """Short sections packed: no snippet at every heading, and a minimum (under which a
    heading does not start a snippet) that the whole note is under."""
    settings = settings or ChunkSettings()
    return dataclasses.replace(
        settings, snippet_per_heading=False, snippet_min_tokens=settings.snippet_max_tokens
    )


def snippets(text: str, settings: ChunkSettings) -> list[Chunk]:
    chunks = chunk_document(
        parse(text.encode(), "markdown"), fp=FP, title="Awards", settings=settings
    )
    return [c for c in chunks if c.tier is Tier.SNIPPET]


# -- the chunker -------------------------------------------------------------------------


def test_a_packed_snippet_keeps_the_places_of_its_inner_headings() -> None:
    (one,) = snippets(AWARDS, packed())
    assert one.heading_path == ("Awards", "Winner")
    assert one.inner == (
        InnerHeading(AWARDS.index("## Runners-up"), ("Awards", "Runners-up")),
        InnerHeading(AWARDS.index("## Judges"), ("Awards", "Judges")),
    )
    # a snippet at every heading has none to keep
    apart = snippets(AWARDS, dataclasses.replace(ChunkSettings(), snippet_per_heading=True))
    assert [c.heading_path[-1] for c in apart] == ["Winner", "Runners-up", "Judges"]
    assert all(c.inner == () for c in apart)


def test_a_snippet_on_a_page_keeps_no_inner_headings() -> None:
    """A PDF's snippet is cited by its page, which a heading inside it does not change."""
    body = "Intro\n\nSome words here.\n\nMethods\n\nMore words there.\n"
    spans = [(0, 5, BlockKind.HEADING, ("Intro",)), (7, 23, BlockKind.PARAGRAPH, ("Intro",))]
    spans += [(25, 32, BlockKind.HEADING, ("Methods",))]
    spans += [(34, 51, BlockKind.PARAGRAPH, ("Methods",))]
    blocks = tuple(
        Block(k, s, e, p, level=1 if k is BlockKind.HEADING else 0, page=1) for s, e, k, p in spans
    )
    doc = ParsedDocument(body=body, blocks=blocks, page_count=1)
    chunks = chunk_document(doc, fp=FP, title="Paper", settings=packed())
    (one,) = [c for c in chunks if c.tier is Tier.SNIPPET]
    assert one.page_start == 1 and one.inner == ()
    # the same blocks off a page keep the inner heading
    off = ParsedDocument(body=body, blocks=tuple(dataclasses.replace(b, page=None) for b in blocks))
    (two,) = [
        c
        for c in chunk_document(off, fp=FP, title="Paper", settings=packed())
        if c.tier is Tier.SNIPPET
    ]
    assert two.inner == (InnerHeading(25, ("Methods",)),)


# -- which heading is chosen ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "cited"),
    [
        ("how many credits did Bob receive", ("Awards", "Runners-up")),
        ("who scored the entries", ("Awards", "Judges")),  # plural and stopwords aside
        ("Alice", ("Awards", "Winner")),  # the own heading's part: its own citation
        ("points for an entry", ("Awards", "Winner")),  # a tie (one word each): its own
        ("credits judges", ("Awards", "Winner")),  # a tie of two inner parts: its own too
        ("zebra", ("Awards", "Winner")),  # no query word anywhere
        ("runners-up", ("Awards", "Runners-up")),  # the heading's own words are its part's
    ],
)
def test_a_hit_is_cited_under_the_part_holding_most_query_words(
    query: str, cited: tuple[str, ...]
) -> None:
    (one,) = snippets(AWARDS, packed())
    at = cited_under(one, query_words(query))
    assert (at.heading_path if at else one.heading_path) == cited


# -- search: citation, anchor, de-dup ----------------------------------------------------


@pytest.fixture
def awards(shelf: Shelf, tmp_path: Path) -> Document:
    shelf.chunk_settings = packed(shelf.chunk_settings)
    root = tmp_path / "awards"
    root.mkdir()
    (root / "awards.md").write_text(AWARDS)
    shelf.add(root)
    (doc,) = shelf.documents()
    return doc


def test_search_cites_the_inner_heading_with_its_anchor(shelf: Shelf, awards: Document) -> None:
    for mode in ("lexical", "vector", "hybrid"):
        hit = shelf.search("credits received", mode=mode, limit=3).hits[0]
        assert hit.citation.heading_path == ("Awards", "Runners-up"), mode
        assert hit.citation.anchor == AWARDS.index("## Runners-up")
        assert hit.chunk.heading_path == ("Awards", "Winner")  # the snippet is unchanged
        assert hit.citation.label == "Awards (awards.md#0)"
    own = shelf.search("Alice won", mode="lexical").hits[0]
    assert own.citation.heading_path == ("Awards", "Winner") and own.citation.anchor == 0


def _put(
    store: Store, chunks: Sequence[tuple[str, tuple[str, ...], tuple[InnerHeading, ...]]]
) -> Document:
    """A document of snippets made by hand: (text, heading path, inner headings) each,
    laid end to end in the body."""
    doc = Document(
        id=document_id(FP),
        sha256=FP,
        title="Log",
        path="/lib/log.md",
        rel_path="log.md",
        source_id=None,
        source_host="h",
        file_type="markdown",
        size_bytes=10,
        added_at=1.0,
        updated_at=1.0,
        status="complete",
    )
    rows, at = [], 0
    for i, (text, path, inner) in enumerate(chunks):
        moved = tuple(
            InnerHeading(at + text.index("## " + h.heading_path[-1]), h.heading_path) for h in inner
        )
        rows.append(
            Chunk(
                id=chunk_id(FP, Tier.SNIPPET, i),
                document_id=doc.id,
                tier=Tier.SNIPPET,
                index=i,
                text=text,
                header="[DOC: Log]",
                start=at,
                end=at + len(text),
                heading_path=path,
                inner=moved,
            )
        )
        at += len(text) + 2
    with store.transaction():
        store.put_document(doc, rows, None)
    return doc


NOTES = ("Log", "Notes")
LOG = [
    (
        "## Monday\n\nRain all day.\n\n## Notes\n\nThe rain gauge overflowed.",
        ("Log", "Monday"),
        (InnerHeading(0, NOTES),),
    ),
    ("## Notes\n\nThe rain gauge was emptied and the rain stopped.", NOTES, ()),
    ("## Tuesday\n\nSunny and dry, no rain.", ("Log", "Tuesday"), ()),
]


def test_one_hit_per_cited_heading(shelf: Shelf) -> None:
    """Two snippets cited under one (file, heading) give one hit; ``group="all"`` both."""
    _put(shelf.store, LOG)
    shelf.runtime.changed()
    hits = shelf.search("rain gauge", mode="lexical").hits
    cited = [h.citation.heading_path for h in hits]
    assert cited.count(NOTES) == 1 and len(cited) == len(set(cited))
    every = shelf.search("rain gauge", mode="lexical", group="all").hits
    assert [h.citation.heading_path for h in every].count(NOTES) == 2
    # a snippet whose own heading is taken is still cited under a free inner one
    mon = shelf.search("monday rain notes gauge overflowed", mode="lexical").hits
    assert mon[0].chunk.index == 0 and mon[0].citation.heading_path == NOTES


# -- both stores: the column, the places ---------------------------------------------------


def test_the_store_keeps_a_chunks_inner_headings(store: SearchStore) -> None:
    from docshelf.search.reader import chunk_place

    doc = _put(store, LOG)
    chunks = store.chunks_of_document(doc.id, Tier.SNIPPET)
    assert chunks[0].inner == (InnerHeading(LOG[0][0].index("## Notes"), NOTES),)
    assert [c.inner for c in chunks[1:]] == [(), ()]
    assert store.get_chunks([chunks[0].id]) == [chunks[0]]
    places = store.chunk_places([c.id for c in chunks])
    assert places[chunks[0].id].inner == (NOTES,)
    assert places == {c.id: chunk_place(c) for c in chunks}


# -- a library made before: the migration, the status ------------------------------------

OLD_COLUMNS = (
    "id, document_id, tier, ord, parent_id, prev_id, next_id, heading_path, page_start, "
    "page_end, char_start, char_end, token_count, header, text"
)


def _old_store(url: str, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """A store at schema 9 (no inner_headings column) holding one packed snippet."""
    schema = sqlite_schema if module == "sqlite" else postgres_schema
    with monkeypatch.context() as patch:
        patch.setattr(f"docshelf.store.{module}.MIGRATIONS", schema.MIGRATIONS[:9])
        store: Any = open_store(url)
        assert store.schema_version() == 9
        text, path, _ = LOG[0]
        d = Document(
            id=document_id(FP), sha256=FP, title="Log", path="/lib/log.md", rel_path="log.md",
            source_id=None, source_host="h", file_type="markdown", size_bytes=10,
            added_at=1.0, updated_at=1.0, status="complete",
        )  # fmt: skip
        heading = '["Log", "Monday"]' if module == "sqlite" else list(path)
        with store.transaction():
            store._x(
                # the columns as they were then (before migration 16's ocr_pages)
                f"INSERT INTO documents({DOCUMENT_COLUMNS.removesuffix(', ocr_pages')}) "
                f"VALUES ({', '.join('?' * (len(DOCUMENT_FIELDS) - 1))})",
                document_row(d, store.dialect.encode_list)[:-1],
            )
            store._x(
                f"INSERT INTO chunks({OLD_COLUMNS}) VALUES ({', '.join('?' * 15)})",
                (chunk_id(FP, Tier.SNIPPET, 0), d.id, "snippet", 0, None, None, None, heading,
                 None, None, 0, len(text), 9, "[DOC: Log]", text),
            )  # fmt: skip
        store.close()


@pytest.mark.parametrize("module", ["sqlite", "postgres"])
def test_the_migration_keeps_old_chunks_citable_and_says_a_reindex_is_due(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import pg

    def check(url: str) -> None:
        _old_store(url, monkeypatch, module)
        store = open_store(url)
        try:
            assert store.schema_version() >= 10
            (chunk,) = store.chunks_of_document(document_id(FP), Tier.SNIPPET)
            assert chunk.inner == () and chunk.heading_path == ("Log", "Monday")
            assert store.chunk_places([chunk.id])[chunk.id].inner == ()
            assert own_engines(store).lexical.search(["gauge"], 5, _filters())[0][0] == chunk.id
            # made before the chunker's version was kept: a reindex is due
            assert reindex_due(store) is not None and "docshelf reindex" in str(reindex_due(store))
            store.set_meta(CHUNKER_META, str(CHUNKER_VERSION))
            assert reindex_due(store) is None
        finally:
            store.close()

    if module == "sqlite":
        check(f"sqlite:///{tmp_path / 'old.db'}")
    else:
        with pg.fresh_schema() as url:
            check(url)


def _filters() -> Any:
    from docshelf.store import SearchFilters

    return SearchFilters()


def test_status_says_a_reindex_is_due_until_one_is_run(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    assert shelf.store.get_meta(CHUNKER_META) == str(CHUNKER_VERSION)
    assert shelf.status().reindex_due is None  # a library made by this chunker
    shelf.store.set_meta(CHUNKER_META, "1")  # as if an older chunker had made it
    due = shelf.status().reindex_due
    assert due is not None and "version 1" in due and "docshelf reindex" in due
    admin = {"Authorization": f"Bearer {shelf.local_admin_token()}"}
    with TestClient(create_app(shelf)) as client:
        assert client.get("/v1/reindex", headers=admin).json()["due"] == due
    shelf.reindex()
    assert shelf.status().reindex_due is None
    assert shelf.store.get_meta(CHUNKER_META) == str(CHUNKER_VERSION)


# -- the faces open at the cited heading ---------------------------------------------------


@pytest.fixture
def admin(shelf: Shelf) -> Iterator[tuple[TestClient, dict[str, str]]]:
    with TestClient(create_app(shelf)) as client:
        yield client, {"Authorization": f"Bearer {shelf.local_admin_token()}"}


def test_the_api_cites_and_opens_at_the_inner_heading(
    shelf: Shelf, awards: Document, admin: tuple[TestClient, dict[str, str]]
) -> None:
    client, auth = admin
    r = client.post(
        "/v1/search", json={"query": "credits received", "mode": "lexical"}, headers=auth
    )
    assert r.status_code == 200, r.text
    hit = r.json()["hits"][0]
    citation = hit["citation"]
    anchor = AWARDS.index("## Runners-up")
    assert citation["heading_path"] == ["Awards", "Runners-up"] and citation["anchor"] == anchor
    params: dict[str, Any] = {"chunk": hit["chunk_id"], "at": anchor}
    view = client.get(f"/v1/documents/{awards.id}/view", params=params, headers=auth).json()
    assert view["heading_path"] == ["Awards", "Runners-up"] and view["anchor"] == anchor
    target = next(b for b in view["blocks"] if b["id"] == view["target"])
    assert target["kind"] == "heading" and "Runners-up" in str(target["inlines"])
    # without the anchor: the snippet's own heading, its first block scrolled to, as before
    plain = client.get(
        f"/v1/documents/{awards.id}/view", params={"chunk": hit["chunk_id"]}, headers=auth
    ).json()
    assert plain["heading_path"] == ["Awards", "Winner"]
    assert plain["target"] == "b0" and view["target"] != "b0"
    # context with the anchor cites what the search cited
    ctx = client.get(
        f"/v1/chunks/{hit['chunk_id']}/context", params={"anchor": anchor}, headers=auth
    ).json()
    assert ctx["citation"]["heading_path"] == ["Awards", "Runners-up"]


def test_mcp_and_the_cli_context_cite_the_inner_heading(shelf: Shelf, awards: Document) -> None:
    from docshelf.integrations.mcp_tools import Tools

    tools = Tools(shelf, lambda ctx: None)
    none: Any = None  # the tools read the caller from the context: here, no one
    found = tools.search_documents(none, "credits received", mode="lexical")
    hit = found["hits"][0]
    assert hit["citation"]["heading_path"] == ["Awards", "Runners-up"]
    anchor = hit["citation"]["anchor"]
    ctx = tools.get_context(none, hit["chunk_id"], anchor=anchor)
    assert ctx["citation"]["heading_path"] == ["Awards", "Runners-up"]
    own = tools.get_context(none, hit["chunk_id"])["citation"]
    assert own["heading_path"] == ["Awards", "Winner"]
    result = shelf.context(hit["chunk_id"], "snippet-window", anchor=anchor)
    assert result.citation.heading_path == ("Awards", "Runners-up")
    assert result.citation.anchor == anchor
