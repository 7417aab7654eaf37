"""Context a person reads (issue 42): "Section" is the section of the hit's heading and
"Neighbourhood" that section with the sections next to it — not the chunker's section
chunks, which pack many headings — bounded in characters, with the hit's place in the
text said, so a face can show it in view and tint only it."""

from __future__ import annotations

import re
from pathlib import Path

from docshelf import plaintext, views
from docshelf.model import Chunk, Tier
from docshelf.search.spans import NEIGHBOURHOOD_CHARS, SECTION_CHARS
from docshelf.shelf import Shelf


def _paragraph(part: str, n: int) -> str:
    return (
        f"Paragraph {n} of {part} says what {part} is about in plain words, long enough to "
        "read as a paragraph of a real guide, with `code` and **bold** marks in it. "
    ) + "Then it goes on with more plain words, as a paragraph of a real guide does. " * 5


def _guide() -> str:
    parts = ["# Guide\n\n" + _paragraph("the guide", 0)]
    for i in range(12):
        body = "\n\n".join(_paragraph(f"part {i}", n) for n in range(4))
        parts.append(f"## Part {i}\n\n{body}")
        if i == 7:
            parts.append("### Detail\n\n" + _paragraph("the detail", 0))  # a snippet alone
        if i == 9:  # packed into one snippet with the next part's heading and first paragraph
            parts.append("### Aside\n\nA short aside.")
    long_body = "\n\n".join(_paragraph("the long part", n) for n in range(30))
    parts.append(f"## Long part\n\n{long_body}")
    parts.append("## Last part\n\n" + _paragraph("the last part", 0))
    return "\n\n".join(parts) + "\n"


def _headings(text: str) -> list[str]:
    return re.findall(r"^#+ .*$", text, re.M)


def _library(tmp_path: Path, shelf: Shelf) -> list[Chunk]:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(_guide())
    shelf.add(root)
    doc = shelf.documents()[0]
    snippets = shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)
    sections = shelf.store.chunks_of_document(doc.id, Tier.SECTION)
    # the chunker's section chunks pack several parts each: what "Section" used to be
    assert any(len(_headings(s.text)) > 1 for s in sections)
    return snippets


def _under(snippets: list[Chunk], *path: str) -> list[Chunk]:
    return [s for s in snippets if s.heading_path[: len(path) + 1] == ("Guide", *path)]


def test_section_is_the_hits_heading_and_neighbourhood_the_sections_beside_it(
    tmp_path: Path, shelf: Shelf
) -> None:
    snippets = _library(tmp_path, shelf)
    hit = _under(snippets, "Part 5")[-1]

    section = shelf.context(hit.id, "parent-section")
    assert _headings(section.text) == ["## Part 5"]  # the whole of it and nothing else
    assert section.chunks == _under(snippets, "Part 5")
    assert section.text[slice(*section.hit_span)] == hit.text
    assert not section.cut_before and not section.cut_after

    hood = shelf.context(hit.id, "section-neighborhood")
    assert _headings(hood.text) == ["## Part 4", "## Part 5", "## Part 6"]
    assert hood.text[slice(*hood.hit_span)] == hit.text


def test_a_section_that_is_only_the_hit_reads_as_its_parents(tmp_path: Path, shelf: Shelf) -> None:
    snippets = _library(tmp_path, shelf)
    (detail,) = _under(snippets, "Part 7", "Detail")
    section = shelf.context(detail.id, "parent-section")
    assert _headings(section.text) == ["## Part 7", "### Detail"]
    hood = shelf.context(detail.id, "section-neighborhood")
    assert _headings(hood.text) == ["## Part 6", "## Part 7", "### Detail", "## Part 8"]


def test_a_long_section_is_cut_around_the_hit_and_says_so(tmp_path: Path, shelf: Shelf) -> None:
    snippets = _library(tmp_path, shelf)
    long = _under(snippets, "Long part")
    assert sum(len(s.text) for s in long) > 2 * SECTION_CHARS
    hit = long[len(long) // 2]
    section = shelf.context(hit.id, "parent-section")
    assert len(section.text) <= SECTION_CHARS
    assert section.cut_before and section.cut_after
    assert section.chunks[0] in long and section.chunks[-1] in long
    start, end = section.hit_span
    assert section.text[start:end] == hit.text
    assert start > SECTION_CHARS / 4 and len(section.text) - end > SECTION_CHARS / 4  # in view

    hood = shelf.context(hit.id, "section-neighborhood")
    assert SECTION_CHARS < len(hood.text) <= NEIGHBOURHOOD_CHARS
    assert {c.id for c in section.chunks} < {c.id for c in hood.chunks}


def test_the_context_json_says_where_the_hit_is_and_reads_as_text(
    tmp_path: Path, shelf: Shelf
) -> None:
    snippets = _library(tmp_path, shelf)
    hit = _under(snippets, "Part 5")[1]
    out = views.context(shelf.context(hit.id, "parent-section"))
    assert set(out) >= {"chunk_id", "mode", "text", "chunks", "citation"}  # SPEC §9
    assert out["text"][out["hit"]["start"] : out["hit"]["end"]] == hit.text
    shown = out["display"]
    assert shown["hit"] == plaintext.readable(hit.text, "markdown")
    assert shown["before"].startswith("Part 5\n\nParagraph 0 of part 5")  # no "##"
    assert "`" not in shown["before"] + shown["hit"] + shown["after"]
    assert "**" not in shown["before"] + shown["hit"] + shown["after"]
    assert out["cut"] == {"before": False, "after": False}


def test_a_section_chunk_asked_for_by_its_id_is_itself(tmp_path: Path, shelf: Shelf) -> None:
    snippets = _library(tmp_path, shelf)
    parent = snippets[3].parent_id or ""
    section = shelf.context(parent, "parent-section")
    assert [c.id for c in section.chunks] == [parent]
    assert section.hit_span == (0, len(section.text))


def test_a_hit_cited_under_an_inner_heading_reads_that_headings_section(
    tmp_path: Path, shelf: Shelf
) -> None:
    snippets = _library(tmp_path, shelf)
    [packed] = [s for s in snippets if s.inner]
    assert packed.heading_path == ("Guide", "Part 9", "Aside")
    [inner] = packed.inner
    assert inner.heading_path == ("Guide", "Part 10")
    cited = shelf.context(packed.id, "parent-section", anchor=inner.start)
    assert _headings(cited.text) == ["### Aside", "## Part 10"]  # the hit whole, then Part 10
    assert cited.chunks == [packed, *_under(snippets, "Part 10")]
    assert cited.citation.heading_path == ("Guide", "Part 10")
    own = shelf.context(packed.id, "parent-section")  # under its own heading: Part 9's
    assert _headings(own.text) == ["## Part 9", "### Aside", "## Part 10"]
