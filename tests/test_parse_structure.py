"""Structure kept at parse time: ``.txt`` that is Markdown, RST titles from front matter."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse import parse
from docshelf.parse.detect import SCAN_CHARS, looks_like_markdown


def txt(text: str) -> ParsedDocument:
    return parse(text.encode(), "text")


def headings(doc: ParsedDocument) -> list[tuple[int, str]]:
    return [(b.level, b.heading_path[-1]) for b in doc.blocks if b.kind is BlockKind.HEADING]


# -- .txt that is Markdown ------------------------------------------------------------------

MANUAL = """\
# Backup Manual

Run the tool every night.

## Installing

```sh
# not a heading: a shell comment inside a fence
make install
```

## Restoring

- stop the service
- copy the archive back
"""


def test_txt_with_markdown_structure_gets_headings_and_code() -> None:
    doc = txt(MANUAL)
    assert headings(doc) == [(1, "Backup Manual"), (2, "Installing"), (2, "Restoring")]
    assert doc.title == "Backup Manual"
    code = [b for b in doc.blocks if b.kind is BlockKind.CODE]
    assert len(code) == 1 and code[0].heading_path == ("Backup Manual", "Installing")
    assert doc.blocks[-1].kind is BlockKind.LIST
    assert doc.blocks[-1].heading_path == ("Backup Manual", "Restoring")


def test_one_heading_and_a_fence_is_enough_evidence() -> None:
    doc = txt("# Notes\n\nSome text.\n\n~~~\ncode\n~~~\n")
    assert headings(doc) == [(1, "Notes")]


@pytest.mark.parametrize(
    "text",
    [
        # One '#' line in prose: a numbered remark, not a document outline.
        "We met on Monday.\n\n# 1 is the item we agreed on first.\n\nThen we left.\n",
        # Hashtags and a shebang are not headings.
        "Loved the talk #python #pycon\n\nSee you #nextyear.\n",
        "#!/bin/sh\necho hello\n",
        # A commented configuration file: many '# ...' lines inside blocks.
        "# server settings\nport = 8080\n# the host\nhost = example\n# log level\nlevel = info\n",
        # Lists alone, or a lone unclosed fence, are plain text too.
        "Shopping:\n- milk\n- eggs\n\nThat is all.\n",
        "```\nnot closed\n",
    ],
)
def test_prose_stays_plain(text: str) -> None:
    doc = txt(text)
    assert not looks_like_markdown(text)
    assert headings(doc) == [] and doc.title is None
    assert {b.kind for b in doc.blocks} == {BlockKind.PARAGRAPH}


def test_only_the_start_of_a_huge_text_is_examined() -> None:
    filler = "plain words in a line\n" * (SCAN_CHARS // 22 + 10)
    assert not looks_like_markdown(filler + "# A\n\ntext\n\n# B\n\ntext\n")
    assert looks_like_markdown("# A\n\ntext\n\n# B\n\ntext\n" + filler)


_WORD = st.text(string.ascii_letters, min_size=1, max_size=9)
_HASHTAG = _WORD.map(lambda w: "#" + w)
_LINE = st.lists(st.one_of(_WORD, _WORD, _WORD, _HASHTAG), min_size=1, max_size=14).map(" ".join)
_PARAGRAPH = st.lists(_LINE, min_size=1, max_size=5).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(
    paragraphs=st.lists(_PARAGRAPH, min_size=1, max_size=8),
    hash_line=st.one_of(st.none(), _LINE.map(lambda line: "# " + line)),
    where=st.integers(min_value=0, max_value=8),
)
def test_prose_with_hashtags_and_at_most_one_hash_line_is_plain(
    paragraphs: list[str], hash_line: str | None, where: int
) -> None:
    if hash_line is not None:
        paragraphs.insert(min(where, len(paragraphs)), hash_line)
    text = "\n\n".join(paragraphs) + "\n"
    assert not looks_like_markdown(text)
    assert headings(txt(text)) == []


_TITLE = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    sections=st.lists(
        st.tuples(st.integers(min_value=1, max_value=3), _TITLE, _PARAGRAPH),
        min_size=2,
        max_size=8,
    )
)
def test_markdown_sections_are_detected_and_become_headings(
    sections: list[tuple[int, str, str]],
) -> None:
    text = "".join(f"{'#' * level} {title}\n\n{body}\n\n" for level, title, body in sections)
    assert looks_like_markdown(text)
    assert [h for _, h in headings(txt(text))] == [title for _, title, _ in sections]


# -- reStructuredText titles ----------------------------------------------------------------

PEP = """\
PEP: 9999
Title: Explicit Is Better Than Implicit
Author: A. Writer <writer@example.org>
Status: Active
Type: Informational
Created: 01-Jan-2024
Post-History: 02-Jan-2024,
              03-Jan-2024


Abstract
========

This PEP states a principle.


Introduction
============

Explicit is better than implicit.
"""


def test_rst_title_from_an_rfc822_header_block() -> None:
    doc = parse(PEP.encode(), "rst")
    assert doc.title == "Explicit Is Better Than Implicit"
    assert headings(doc) == [(1, "Abstract"), (1, "Introduction")]
    header = doc.body[doc.blocks[0].start : doc.blocks[0].end]
    assert doc.blocks[0].kind is BlockKind.LIST
    assert "- PEP: 9999" in header and "- Status: Active" in header


def test_rst_title_and_subtitle_promoted_by_docutils() -> None:
    text = "=======\nThe Log\n=======\n\n--------\nA Study\n--------\n\nIntro\n=====\n\nText.\n"
    doc = parse(text.encode(), "rst")
    assert doc.title == "The Log"


def test_rst_title_from_a_docinfo_title_field() -> None:
    text = ":Title: Field Title\n:Author: Someone\n\nAbstract\n========\n\nText.\n\nMore\n====\n"
    assert parse(text.encode(), "rst").title == "Field Title"


def test_rst_generic_first_heading_is_not_a_title() -> None:
    text = "Abstract\n========\n\nText.\n\nMethods\n=======\n\nMore text.\n"
    assert parse(text.encode(), "rst").title is None  # the file name stands in


def test_rst_key_value_prose_without_a_title_field_is_ordinary_text() -> None:
    text = "Note: this is a remark.\n\nReal Title\n==========\n\nBody.\n\nNext\n====\n\nx\n"
    doc = parse(text.encode(), "rst")
    assert doc.blocks[0].kind is BlockKind.PARAGRAPH
    assert doc.title == "Real Title"
