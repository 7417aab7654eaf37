"""Parsing: markdown structure, frontmatter, tags, decoding and hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse import FILE_TYPES, file_type_for, parse
from docshelf.shelf import Shelf


def md(text: str) -> ParsedDocument:
    return parse(text.encode(), "markdown")


def texts(doc: ParsedDocument) -> list[str]:
    return [doc.body[b.start : b.end] for b in doc.blocks]


def kinds(doc: ParsedDocument) -> list[BlockKind]:
    return [b.kind for b in doc.blocks]


# -- markdown structure --------------------------------------------------------


def test_heading_paths_nest_by_level() -> None:
    doc = md("# A\n\nintro\n\n## B\n\nb text\n\n### C\n\nc text\n\n## D\n\nd text\n\n# E\n\ne\n")
    paths = {doc.body[b.start : b.end]: b.heading_path for b in doc.blocks}
    assert paths["# A"] == ("A",)
    assert paths["intro"] == ("A",)
    assert paths["b text"] == ("A", "B")
    assert paths["### C"] == ("A", "B", "C")
    assert paths["c text"] == ("A", "B", "C")
    assert paths["## D"] == ("A", "D")
    assert paths["d text"] == ("A", "D")
    assert paths["e"] == ("E",)
    levels = [b.level for b in doc.blocks if b.kind is BlockKind.HEADING]
    assert levels == [1, 2, 3, 2, 1]
    assert all(b.level == 0 for b in doc.blocks if b.kind is not BlockKind.HEADING)


def test_heading_text_drops_markup_and_setext_headings_count() -> None:
    doc = md("Title with `code` and *emphasis*\n===\n\n## A [link](http://x) here\n\ntext\n")
    assert doc.title == "Title with code and emphasis"
    assert doc.blocks[-1].heading_path == ("Title with code and emphasis", "A link here")


def test_a_headings_wikilink_reads_as_obsidian_shows_it() -> None:
    """ "# An Introduction to [[dataview|Dataview]]" is titled as Obsidian shows it: the
    alias, else the target; a code span's brackets stay as written."""
    doc = md(
        "# An Introduction to [[dataview|Dataview]]\n\ntext\n\n"
        "## [[Breadcrumbs]] with `[[x]]` and [[Note#Part]]\n\nmore\n"
    )
    assert doc.title == "An Introduction to Dataview"
    assert doc.blocks[-1].heading_path == (
        "An Introduction to Dataview",
        "Breadcrumbs with [[x]] and Note",
    )


def test_fenced_code_is_one_block_and_its_hash_lines_are_not_headings() -> None:
    doc = md("# Real\n\n```python\n# not a heading\nx = 1\n```\n\nafter\n")
    assert kinds(doc) == [BlockKind.HEADING, BlockKind.CODE, BlockKind.PARAGRAPH]
    assert texts(doc)[1] == "```python\n# not a heading\nx = 1\n```"
    assert doc.blocks[2].heading_path == ("Real",)


def test_tables_lists_quotes_and_other_blocks() -> None:
    doc = md(
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n1. first\n2. second\n\n"
        "> quoted\n> more\n\n---\n\n    indented code\n"
    )
    assert kinds(doc) == [
        BlockKind.TABLE,
        BlockKind.LIST,
        BlockKind.LIST,
        BlockKind.QUOTE,
        BlockKind.OTHER,
        BlockKind.CODE,
    ]
    assert texts(doc)[0] == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert texts(doc)[1] == "- one\n- two"


def test_block_spans_are_stripped_ordered_and_disjoint() -> None:
    doc = md("# T  \n\n  para one\nline two   \n\n\n- a\n\n  - nested\n\n```\ncode\n```\n")
    previous_end = 0
    for block in doc.blocks:
        text = doc.body[block.start : block.end]
        assert text and text == text.strip()
        assert block.start >= previous_end
        previous_end = block.end


# -- title, frontmatter, tags --------------------------------------------------


def test_title_is_the_first_h1_else_none() -> None:
    assert md("## Sub\n\n# Main\n\n# Second\n").title == "Main"
    assert md("#\n\n# Not empty\n").title == "Not empty"
    assert md("just text\n\n## only h2\n").title is None
    assert md("#\n\ntext\n").title is None


def test_a_template_s_placeholder_is_never_a_title() -> None:
    """A note made from a template and never named keeps "{{title}}" (or Templater's
    "<% … %>"): it names nothing, so the next title or the file's own name stands."""
    assert md("---\ntitle: '{{title}}'\n---\n# {{title}}\n\nA thought.\n").title is None
    assert md("# <% tp.file.title %>\n\nA thought.\n").title is None
    assert md("---\ntitle: '{{title}}'\n---\n# Named at last\n\nText.\n").title == ("Named at last")
    assert md("# {{date}} Daily review\n\nText.\n").title == "{{date}} Daily review"


def test_a_vault_note_made_from_a_template_is_titled_by_its_file(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden ideas.md").write_text("# {{title}}\n\nSeeds are captured ideas.\n")
    (vault / "Placeholder only.md").write_text("---\ntitle: '{{title}}'\n---\nNo heading.\n")
    with Shelf(tmp_path / "home", embedder=None) as shelf:
        shelf.add(vault)
        titles = sorted(d.title for d in shelf.documents())
    assert titles == ["Garden ideas", "Placeholder only"]


def test_frontmatter_fields_are_read_and_removed_from_the_body() -> None:
    doc = md(
        "---\ntitle: From Meta\ntags: [alpha, '#beta']\naliases: [One, Two]\n---\n"
        "# Heading\n\nBody #gamma\n"
    )
    assert doc.title == "From Meta"
    assert doc.tags == ("alpha", "beta", "gamma")
    assert doc.aliases == ("One", "Two")
    assert doc.warnings == ()
    assert doc.body == "# Heading\n\nBody #gamma\n"
    assert texts(doc) == ["# Heading", "Body #gamma"]


def test_frontmatter_tags_as_a_string_and_aliases_as_a_string() -> None:
    doc = md("---\ntags: 'one, #two three'\naliases: First Name, Second\n---\ntext\n")
    assert doc.tags == ("one", "two", "three")
    assert doc.aliases == ("First Name", "Second")


def test_empty_frontmatter_is_removed_without_warning() -> None:
    doc = md("---\n---\n# T\n")
    assert doc.body == "# T\n"
    assert doc.warnings == ()


@pytest.mark.parametrize(
    ("front", "warning"),
    [
        ("title: [unclosed\n", "invalid YAML frontmatter"),
        ("- a\n- b\n", "not a mapping"),
        ("just a string\n", "not a mapping"),
    ],
)
def test_bad_frontmatter_is_a_warning_and_its_text_is_kept(front: str, warning: str) -> None:
    text = f"---\n{front}---\n# Title\n\nbody\n"
    doc = md(text)
    assert len(doc.warnings) == 1
    assert warning in doc.warnings[0]
    assert doc.body == text  # nothing is lost
    assert doc.title == "Title"


def test_invalid_yaml_warning_names_the_line() -> None:
    doc = md("---\ntitle: ok\nbad: [\n---\ntext\n")
    assert "line" in doc.warnings[0]


def test_frontmatter_title_must_be_text() -> None:
    doc = md("---\ntitle: {a: 1}\n---\n# H1\n")
    assert doc.title == "H1"
    assert doc.warnings == ("frontmatter title is not text; ignored",)


def test_inline_tags_outside_code_deduplicated_in_order() -> None:
    doc = md(
        "# Notes #todo\n\nSee #project/sub-part and #todo again, not a#b or #1 or (#x).\n\n"
        "Inline `code #nocode` span.\n\n```\n#fenced #tags\n```\n\n"
        "    #indented\n\n- item #listed\n"
    )
    assert doc.tags == ("todo", "project/sub-part", "listed")


def test_no_tags_from_html() -> None:
    """Colours in an HTML block or in inline HTML's attributes are not tags (an Obsidian
    theme note listed #ffffff, #f5f6f8… among the library's tags)."""
    doc = md(
        "<table>\n<tr><td>--background: #ffffff</td>\n"
        '    <td style="color: #f5f6f8">x</td></tr>\n</table>\n\n'
        'A <span style="color: #abc">#kept</span> tag and #after.\n\n'
        "  <div>\n#indented-html\n</div>\n\n#last\n"
    )
    assert doc.tags == ("kept", "after", "last")


def test_unicode_tags() -> None:
    assert md("Über #café and #日本\n").tags == ("café", "日本")


# -- decoding ------------------------------------------------------------------


def test_crlf_and_cr_are_normalised() -> None:
    doc = parse(b"# T\r\n\r\npara one\r\nline two\r\rlast\r", "markdown")
    assert "\r" not in doc.body
    assert texts(doc) == ["# T", "para one\nline two", "last"]


def test_bom_is_stripped() -> None:
    doc = parse(b"\xef\xbb\xbf# Title\n\ntext\n", "markdown")
    assert doc.body.startswith("# Title")
    assert doc.title == "Title"


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
@pytest.mark.parametrize("file_type", ["markdown", "text"])
def test_empty_input_is_rejected(data: bytes, file_type: str) -> None:
    with pytest.raises(InvalidInput, match="empty file"):
        parse(data, file_type)


def test_binary_input_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="binary content, not text"):
        parse(b"PK\x03\x04\x00\x00some zip", "markdown")
    with pytest.raises(InvalidInput, match="binary"):
        parse("text in utf-16".encode("utf-16"), "text")


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b"abc\xffdef", 3), (b"\xef\xbb\xbfok \xc3(", 6), (b"# T\n\ncaf\xe9\n", 8)],
)
def test_invalid_utf8_names_the_byte_offset(data: bytes, offset: int) -> None:
    with pytest.raises(InvalidInput, match=f"invalid UTF-8 at byte {offset}$"):
        parse(data, "markdown")


def test_unsupported_type_names_the_supported_ones() -> None:
    with pytest.raises(InvalidInput) as info:
        parse(b"PK\x03\x04", "epub")
    assert "'epub'" in info.value.message
    assert "markdown" in info.value.message and "text" in info.value.message


def test_file_types_by_extension() -> None:
    assert FILE_TYPES == {
        ".md": "markdown",
        ".markdown": "markdown",
        ".txt": "text",
        ".rst": "rst",
        ".pdf": "pdf",
        ".html": "html",
        ".htm": "html",
        ".docx": "docx",
    }
    assert file_type_for("notes/a.md") == "markdown"
    assert file_type_for("READ.ME.Markdown") == "markdown"
    assert file_type_for("/x/y/z.TXT") == "text"
    assert file_type_for("paper.PDF") == "pdf"
    assert file_type_for("book.epub") is None
    assert file_type_for("Makefile") is None
    assert file_type_for(".md") is None  # a dotfile named ".md" has no extension


# -- plain text ----------------------------------------------------------------


def test_text_paragraphs_split_on_blank_lines() -> None:
    doc = parse(b"  first line\nsecond line  \n\n \t \nnext para\n\n\n# not a heading\n", "text")
    assert texts(doc) == ["first line\nsecond line", "next para", "# not a heading"]
    assert kinds(doc) == [BlockKind.PARAGRAPH] * 3
    assert all(b.heading_path == () for b in doc.blocks)
    assert doc.title is None and doc.tags == ()


# -- any input -----------------------------------------------------------------


MARKDOWNISH = st.text(st.sampled_from("#-*>|`~ \t\n\r1.aé:[]()!_"), max_size=200)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300)
    | st.text(max_size=300).map(str.encode)
    | MARKDOWNISH.map(str.encode)
)
def test_any_bytes_parse_or_raise_invalid_input(data: bytes) -> None:
    for file_type in ("markdown", "text"):
        try:
            doc = parse(data, file_type)
        except InvalidInput:
            continue
        previous_end = 0
        for block in doc.blocks:
            assert previous_end <= block.start < block.end <= len(doc.body)
            text = doc.body[block.start : block.end]
            assert text == text.strip()
            assert block.kind is BlockKind.HEADING or block.level == 0
            previous_end = block.end
        assert doc.title is None or doc.title.strip()
