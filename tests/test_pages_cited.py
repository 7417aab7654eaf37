"""A PDF snippet that runs onto another page is cited at the page its matching words are
on (issue 36): the chunker keeps where each later page starts in a snippet, both stores
and the archive keep it, a search cites the page whose part holds most of the query's
words (a tie: all its pages), and an answer's sentence is cited on its own page."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.chunk import ChunkSettings, approx_tokens, chunk_document
from docshelf.errors import InvalidInput
from docshelf.model import (
    Block,
    BlockKind,
    Chunk,
    Citation,
    Document,
    PageBreak,
    ParsedDocument,
    Tier,
    document_id,
)
from docshelf.search.citing import cited_page, page_parts, place_of, query_words
from docshelf.shelf import Shelf
from docshelf.store import SearchStore
from tests.fakes import HashEmbedder
from tests.fixtures_formats import paged_pdf
from tests.test_portable import line_changed, rewrite, untouched

FP = "cd" * 32
PAGES = [  # (page, paragraph): a paper's text, its third page opening mid-section
    (2, "Shazam listens to a short clip of noisy audio from a phone."),
    (2, "Each clip becomes a spectrogram of its loudest frequencies."),
    (3, "The peaks kept form a constellation map of the recording."),
    (3, "Pairs of peaks are hashed to look the song up."),
]


def paper(pages: list[tuple[int, str]] = PAGES) -> ParsedDocument:
    body, blocks, at = "", [], 0
    for page, text in pages:
        blocks.append(Block(BlockKind.PARAGRAPH, at, at + len(text), (), page=page))
        body += text + "\n\n"
        at += len(text) + 2
    return ParsedDocument(body=body.strip(), blocks=tuple(blocks))


def the_snippet(doc: ParsedDocument) -> Chunk:
    (snippet,) = [
        c
        for c in chunk_document(doc, fp=FP, title="Shazam", settings=ChunkSettings())
        if c.tier is Tier.SNIPPET
    ]
    return snippet


DOC = Document(
    id=document_id(FP), sha256=FP, title="Shazam", path="/lib/shazam.pdf",
    rel_path="shazam.pdf", source_id=None, source_host="h", file_type="pdf",
    size_bytes=10, added_at=1.0, updated_at=1.0, status="complete",
)  # fmt: skip


def test_a_snippet_keeps_where_its_later_pages_start() -> None:
    doc = paper()
    snippet = the_snippet(doc)
    third = doc.body.index("The peaks")
    assert (snippet.page_start, snippet.page_end) == (2, 3)
    assert snippet.page_breaks == (PageBreak(third, 3),)
    assert [(b.page, t[:9]) for b, t in page_parts(snippet)] == [(2, "Shazam li"), (3, "The peaks")]
    # sections are read, not cited by page: they keep none; nor does a note without pages
    section = next(
        c
        for c in chunk_document(doc, fp=FP, title="Shazam", settings=ChunkSettings())
        if c.tier is Tier.SECTION
    )
    assert section.page_breaks == ()
    note = dataclasses.replace(
        doc, blocks=tuple(dataclasses.replace(b, page=None) for b in doc.blocks)
    )
    assert the_snippet(note).page_breaks == ()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 40)), min_size=1, max_size=30),
    st.integers(4, 60),
)
def test_page_breaks_lie_inside_their_snippet_in_order(
    steps: list[tuple[int, int]], size: int
) -> None:
    page, pages = 1, []
    for n, (step, words) in enumerate(steps):
        page += step
        pages.append((page, " ".join(f"w{n}x{k}" for k in range(words)) + "."))
    doc = paper(pages)
    chunks = chunk_document(
        doc,
        fp=FP,
        title="T",
        settings=ChunkSettings(snippet_max_tokens=size, snippet_min_tokens=0),
        count_tokens=approx_tokens,
    )
    for c in chunks:
        if not c.page_breaks:  # sections keep none; a snippet on one page has none
            assert c.tier is Tier.SECTION or c.page_start == c.page_end
            continue
        starts = [c.start, *(b.start for b in c.page_breaks)]
        assert starts == sorted(set(starts)) and starts[-1] < c.end
        assert c.page_start is not None
        numbers = [c.page_start, *(b.page for b in c.page_breaks)]
        assert numbers == sorted(set(numbers)) and numbers[-1] == c.page_end
        # each part is the text of its page's blocks
        for b, text in page_parts(c):
            on_page = [t for p, t in pages if p == b.page]
            assert all(w in " ".join(on_page) for w in text.split())


def test_a_hit_is_cited_at_the_page_that_holds_the_query() -> None:
    snippet = the_snippet(paper())
    (third,) = snippet.page_breaks
    assert cited_page(snippet, query_words("constellation map of peaks")) == third
    second = cited_page(snippet, query_words("noisy audio clip"))
    assert second == PageBreak(snippet.start, 2)
    # a tie, or no word on any page: all its pages
    assert cited_page(snippet, query_words("clip peaks")) is None
    assert cited_page(snippet, query_words("lyrics")) is None
    citation = Citation.for_chunk(snippet, DOC, third)
    assert (citation.page_start, citation.page_end, citation.anchor) == (3, 3, third.start)
    assert citation.label == "Shazam (shazam.pdf p.3)"
    assert Citation.for_chunk(snippet, DOC).label == "Shazam (shazam.pdf pp.2-3)"
    # a citation made again from its chunk keeps its page (the caller's own view of it)
    for at in (third, second, None):
        cited = Citation.for_chunk(snippet, DOC, at)
        assert Citation.for_chunk(snippet, DOC, place_of(snippet, cited)) == cited


def test_the_stores_keep_a_snippets_page_breaks(store: SearchStore) -> None:
    doc = paper()
    chunks = chunk_document(doc, fp=FP, title="Shazam", settings=ChunkSettings())
    with store.transaction():
        store.put_document(DOC, chunks, None)
    kept = store.chunks_of_document(DOC.id, Tier.SNIPPET)
    assert [c.page_breaks for c in kept] == [the_snippet(doc).page_breaks]
    assert store.get_chunks([kept[0].id]) == kept


def test_an_archive_keeps_them_and_refuses_one_out_of_place(shelf: Shelf, tmp_path: Path) -> None:
    chunks = chunk_document(paper(), fp=FP, title="Shazam", settings=ChunkSettings())
    with shelf.store.transaction():
        shelf.store.put_document(DOC, chunks, None)
    archive = tmp_path / "library.zip"
    shelf.export_library(archive)
    with Shelf(tmp_path / "target", embedder=HashEmbedder()) as target:
        target.import_library(archive)
        kept = target.store.chunks_of_document(DOC.id, Tier.SNIPPET)
        assert [c.page_breaks for c in kept] == [the_snippet(paper()).page_breaks]
    # an archive whose page break lies outside its snippet is refused, whole
    with zipfile.ZipFile(archive) as zf:
        (line,) = zf.read("documents.jsonl").splitlines()
    obj = json.loads(line)
    snippet = next(c for c in obj["chunks"] if c["page_breaks"])
    snippet["page_breaks"] = [[snippet["end"] + 5, 3]]
    bad = tmp_path / "bad.zip"
    rewrite(archive, bad, line_changed(1, json.dumps(obj).encode() + b"\n"))
    with Shelf(tmp_path / "other", embedder=HashEmbedder()) as other:
        with pytest.raises(InvalidInput, match=r"a page break of .* is out of place"):
            other.import_library(bad)
        untouched(other)


def test_a_search_and_an_answer_cite_the_page_their_words_are_on(
    shelf: Shelf, tmp_path: Path
) -> None:
    (tmp_path / "starter.pdf").write_bytes(
        paged_pdf(
            [
                ["The bakery kept its sourdough starter in a cool cellar.",
                 "The bakers fed the starter with rye flour every morning."],
                ["In the warm kitchen the starter doubled within six hours.",
                 "A cold cellar slowed the starter to a day."],
            ]
        )
    )  # fmt: skip
    shelf.add(tmp_path)
    hit = shelf.search("starter doubled within six hours warm kitchen", limit=1).hits[0]
    assert (hit.chunk.page_start, hit.chunk.page_end) == (1, 2)  # one snippet, two pages
    assert (hit.citation.page_start, hit.citation.page_end) == (2, 2)
    assert hit.citation.label.endswith("p.2)")
    fed = shelf.search("bakers fed rye flour every morning", limit=1).hits[0]
    assert (fed.citation.page_start, fed.citation.page_end) == (1, 1)
    # the answer's sentence from the other page is cited at its own (a number of its own)
    answer = shelf.ask("What did the bakers feed the starter with every morning?")
    by_n = {c.n: c.citation for c in answer.citations}
    pages = set()
    for sentence in answer.answer.split("] "):
        n = int(sentence.rsplit("[", 1)[1].rstrip("]"))
        page = 2 if "kitchen" in sentence or "cellar slowed" in sentence else 1
        assert (by_n[n].page_start, by_n[n].page_end) == (page, page), answer
        pages.add(page)
    assert pages == {1, 2}, answer.answer
