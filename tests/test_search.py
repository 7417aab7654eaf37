"""Search, citations, filters, hostile queries and context expansion."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docshelf.errors import InvalidInput, NotFound
from docshelf.evaluate.lists import fused as fuse
from docshelf.model import Tier
from docshelf.search.order import FusionSettings
from docshelf.search.query import lexical_terms
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters


@pytest.fixture
def indexed(shelf: Shelf, notes: Path) -> Shelf:
    shelf.add(notes)
    return shelf


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_search_finds_and_cites(indexed: Shelf, mode: str) -> None:
    result = indexed.search("leader election heartbeat", mode=mode)
    assert result.mode == mode
    top = result.hits[0]
    assert top.document.rel_path == "projects/raft.md"
    c = top.citation
    assert c.title == "Raft"
    assert c.label == f"Raft (projects/raft.md#{top.chunk.index})"
    assert c.path.endswith("projects/raft.md")
    assert "Leader election" in c.heading_path
    assert c.page_start is None
    if mode == "hybrid":
        assert top.scores.lexical is not None and top.scores.vector is not None
    assert all(h.chunk.tier is Tier.SNIPPET for h in result.hits)


def test_filters(indexed: Shelf) -> None:
    src = indexed.sources()[0].id
    by_path = indexed.search("flour", filters=SearchFilters(path_prefix="projects/"))
    assert all(h.document.rel_path.startswith("projects/") for h in by_path.hits)
    by_type = indexed.search("flour", filters=SearchFilters(file_type="text"))
    assert {h.document.rel_path for h in by_type.hits} == {"todo.txt"}
    by_tag = indexed.search("flour", filters=SearchFilters(tags=("Baking",)))
    assert {h.document.rel_path for h in by_tag.hits} == {"cooking.md"}
    by_source = indexed.search("flour", filters=SearchFilters(source_id=src))
    assert by_source.hits
    assert indexed.search("flour", filters=SearchFilters(source_id="src_other")).hits == []
    # LIKE wildcards in a prefix are literal
    assert indexed.search("flour", filters=SearchFilters(path_prefix="%")).hits == []


HOSTILE = [
    '"unbalanced',
    "AND OR NOT",
    "NEAR(raft leader, 2)",
    "raft*",
    "-raft",
    "col:raft",
    "^raft",
    "{raft}",
    "raft) OR (1=1",
    "'; DROP TABLE chunks; --",
    "\x00\x01",
    "🦀 unicode ünïcödé",
    "*",
    "a" * 5000,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_break(indexed: Shelf, query: str) -> None:
    for mode in ("hybrid", "lexical"):
        result = indexed.search(query, mode=mode)
        assert isinstance(result.hits, list)
    assert indexed.check() == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(min_size=1, max_size=80).filter(lambda q: q.strip()))
def test_any_query_text_is_safe(indexed: Shelf, query: str) -> None:
    indexed.search(query, mode="lexical")


def test_bad_arguments(indexed: Shelf) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        indexed.search("   ")
    with pytest.raises(InvalidInput, match="mode"):
        indexed.search("raft", mode="fuzzy")
    with pytest.raises(InvalidInput, match="limit"):
        indexed.search("raft", limit=0)


def test_lexical_only_library_says_so(isolated_home: Path, notes: Path) -> None:
    with Shelf(isolated_home, embedder=None) as s:
        s.add(notes)
        result = s.search("leader election")
        assert result.mode == "lexical"
        assert result.notice and "lexical" in result.notice
        assert result.hits[0].document.rel_path == "projects/raft.md"
        assert result.hits[0].scores.vector is None


def test_context_modes(tmp_path: Path, shelf: Shelf) -> None:
    root = tmp_path / "long"
    root.mkdir()
    parts = []
    for i in range(12):
        parts.append(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(400)) + "\n")
    (root / "long.md").write_text("# Long\n\n" + "\n".join(parts))
    shelf.add(root)
    doc = shelf.documents()[0]
    snippets = shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)
    sections = shelf.store.chunks_of_document(doc.id, Tier.SECTION)
    assert len(sections) >= 3 and len(snippets) > len(sections)
    mid = snippets[len(snippets) // 2]

    window = shelf.context(mid.id, "snippet-window")
    assert [c.id for c in window.chunks] == [mid.prev_id, mid.id, mid.next_id]
    assert window.citation.chunk_index == mid.index

    wide = shelf.context(mid.id, "snippet-window", window=2)
    assert len(wide.chunks) == 5

    parent = shelf.context(mid.id, "parent-section")  # its heading's (tests/test_context.py)
    assert mid.id in [c.id for c in parent.chunks]
    assert parent.text[slice(*parent.hit_span)] == mid.text

    hood = shelf.context(mid.id, "section-neighborhood")
    assert {c.id for c in parent.chunks} < {c.id for c in hood.chunks}

    section = shelf.context(mid.parent_id or "", "parent-section")  # a section by its id
    assert [c.id for c in section.chunks] == [mid.parent_id]

    first = shelf.context(snippets[0].id, "snippet-window")
    assert [c.id for c in first.chunks] == [snippets[0].id, snippets[1].id]

    with pytest.raises(NotFound):
        shelf.context("chunk_nope_1")
    with pytest.raises(InvalidInput):
        shelf.context(mid.id, "everything")


def test_query_terms_strip_syntax() -> None:
    assert lexical_terms('NEAR("raft" leader*, 2) -x') == ["near", "raft", "leader", "2", "x"]
    assert lexical_terms("the of") == ["the", "of"]
    assert lexical_terms("the raft") == ["raft"]
    assert lexical_terms("***") == []


rankings = st.lists(
    st.tuples(st.sampled_from([f"c{i}" for i in range(30)]), st.floats(-50, 50)),
    max_size=20,
    unique_by=lambda t: t[0],
).map(lambda r: sorted(r, key=lambda t: -t[1]))


@given(lex=rankings, vec=rankings, method=st.sampled_from(["rrf", "convex"]))
def test_fusion_properties(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], method: str
) -> None:
    s = FusionSettings(method=method, strong_lead=0, few_lexical=0)  # the fused scores alone
    fused = fuse(lex, vec, s)
    assert {f.id for f in fused} == {i for i, _ in lex} | {i for i, _ in vec}
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    assert [(f.id, f.score) for f in fuse(lex, vec, s)] == [(f.id, f.score) for f in fused]
    for f in fused:
        assert f.lexical == dict(lex).get(f.id) and f.vector == dict(vec).get(f.id)


def test_fusion_rewards_agreement() -> None:
    lex = [("a", 10.0), ("b", 5.0), ("c", 1.0)]
    vec = [("b", 0.9), ("d", 0.8), ("a", 0.1)]
    for method in ("rrf", "convex"):
        # the combination itself: without the strong-match rule (a leads lexical by 5/9)
        even = FusionSettings(method=method, vector_weight=0.5, lexical_weight=0.5, strong_lead=0)
        fused = fuse(lex, vec, even)
        assert fused[0].id == "b"


def test_query_syntax_parsing() -> None:
    from docshelf.search.query import ParsedQuery, parse_query

    p = parse_query(
        'raft "leader election" -paxos -"log compaction" tag:#dist path:notes/ type:pdf'
    )
    assert p == ParsedQuery(
        text="raft leader election",
        phrases=("leader election",),
        excluded=("paxos", "log compaction"),
        fields=(("tags", "dist"), ("path_prefix", "notes/"), ("file_type", "pdf")),
    )
    # unbalanced quotes, lone dashes and unknown fields are plain text
    assert parse_query('say "hi - there colour:red').text == "say  hi - there colour:red"
    assert parse_query("-").text == "-"
    assert parse_query("tag:x -y").text == ""


def test_phrases_exclusions_and_fields(indexed: Shelf) -> None:
    hits = indexed.search('"asks for votes"', mode="lexical").hits
    assert hits and all("asks for votes" in h.chunk.text for h in hits)
    assert indexed.search('"votes for asks"', mode="lexical").hits == []
    flour = {h.document.rel_path for h in indexed.search("flour", mode="lexical").hits}
    assert flour == {"cooking.md", "todo.txt"}
    without = indexed.search("flour -plumber", mode="lexical").hits
    assert {h.document.rel_path for h in without} == {"cooking.md"}
    typed = indexed.search("flour type:text", mode="lexical").hits
    assert {h.document.rel_path for h in typed} == {"todo.txt"}
    tagged = indexed.search("flour tag:#baking").hits
    assert {h.document.rel_path for h in tagged} == {"cooking.md"}
    only = indexed.search("tag:baking -x")
    assert only.hits == [] and only.notice


def test_grouping_dedupe_and_expansion(tmp_path: Path, shelf: Shelf) -> None:
    root = tmp_path / "g"
    root.mkdir()
    body = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"zebra{i} stripes pattern word{j}" for j in range(60))
        for i in range(6)
    )
    (root / "zebras.md").write_text(f"# Zebras\n\n{body}\n")
    for name in ("a", "b"):  # different files, the same body text
        (root / f"copy-{name}.md").write_text(
            f"---\ntitle: Copy {name}\n---\nThe exact same sentence about zebra stripes.\n"
        )
    shelf.add(root)
    plain = shelf.search("zebra stripes pattern", limit=50).hits
    assert len({h.chunk.text for h in plain}) == len(plain)  # near-identical copies dropped
    assert sum(h.document.rel_path.startswith("copy-") for h in plain) == 1
    by_doc = shelf.search("zebra stripes pattern", limit=20, group="document").hits
    assert len({h.document.id for h in by_doc}) == len(by_doc) == 2  # one copy deduplicated
    by_section = shelf.search("zebra stripes pattern", limit=20, group="section").hits
    parents = [h.chunk.parent_id for h in by_section]
    assert len(set(parents)) == len(parents)
    expanded = shelf.search("zebra3 stripes", limit=2, expand="parent-section").hits
    top = expanded[0]
    assert top.context is not None and top.context.id == top.chunk.parent_id
    assert top.chunk.text in top.context.text
    with pytest.raises(InvalidInput):
        shelf.search("zebra", group="paragraph")
    with pytest.raises(InvalidInput):
        shelf.search("zebra", expand="everything")
