"""Text evidence at ranking time (issue 15): exact matches of the query first, and the
right section of a document chosen among that document's own snippets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.model import Chunk, Tier
from docshelf.search.evidence import (
    content_words,
    exact_matches,
    has_verbatim,
    heading_share,
    names_heading,
    words,
)
from docshelf.search.fusion import Fused, exact_first, within_documents
from docshelf.shelf import Shelf


def chunk(cid: str, text: str = "", path: tuple[str, ...] = (), **kw: object) -> Chunk:
    fields: dict[str, object] = dict(
        id=cid,
        document_id=kw.pop("doc", "d"),
        tier=Tier.SNIPPET,
        index=kw.pop("index", 1),
        text=text,
        header=kw.pop("header", ""),
        start=0,
        end=len(text),
        heading_path=path,
    )
    fields.update(kw)
    return Chunk(**fields)  # type: ignore[arg-type]


def test_a_query_names_a_heading_with_the_same_content_words() -> None:
    q = content_words("team meeting notes")
    assert names_heading(q, chunk("a", path=("Work", "Team Meeting Notes")))
    assert not names_heading(q, chunk("b", path=("Team meeting notes and actions",)))
    assert not names_heading(q, chunk("c", path=("Team Meeting Notes", "Agenda")))  # not its own
    assert not names_heading(content_words("the notes"), chunk("d", path=("Notes",)))  # one word
    # at a file's top without headings, the title is the heading
    top = chunk("e", index=0, header="[DOC: Team meeting notes]\n[PATH: ]", page_start=1)
    assert names_heading(q, top)
    assert not names_heading(q, dataclasses.replace(top, index=3))


def test_a_remembered_line_is_found_word_for_word() -> None:
    text = "Don't ask to ask,\njust ask — that is the rule of the server."
    assert has_verbatim(words("don't ask to ask, just ask"), chunk("a", text))
    assert not has_verbatim(words("ask to ask just ask"), chunk("b", "ask to ask, and just ask"))
    assert not has_verbatim(words("just ask"), chunk("c", text))  # too short to tell
    assert exact_matches("don't ask to ask, just ask", [chunk("a", text), chunk("b", "ask")]) == (
        set(),
        {"a"},
    )
    # a title named in another note's link is a verbatim match; its own heading comes first
    link = chunk("l", "See [[Dice Roller Tables Collection|Dice Roller Tables Collection]].")
    own = chunk("o", "I made a collection of tables.", path=("Dice Roller Tables Collection",))
    assert exact_matches("Dice Roller Tables Collection", [link, own]) == ({"o"}, {"l"})


def test_the_heading_share_counts_the_query_words_named() -> None:
    q = content_words("kettle warranty period")
    assert heading_share(q, chunk("a", path=("Kettle", "Warranty"))) == 1 / 3
    assert heading_share(q, chunk("b")) == 0.0
    assert heading_share(frozenset(), chunk("c", path=("Warranty",))) == 0.0


# fused lists as fusion leaves them: best first, the first few maybe kept there as strong
fused_lists = st.tuples(
    st.lists(
        st.tuples(st.sampled_from([f"c{i}" for i in range(20)]), st.floats(0, 1)),
        max_size=15,
        unique_by=lambda t: t[0],
    ),
    st.integers(0, 3),
).map(
    lambda r: [
        Fused(i, s, s, None, strong=n < r[1])
        for n, (i, s) in enumerate(sorted(r[0], key=lambda t: -t[1]))
    ]
)


ids20 = st.sets(st.sampled_from([f"c{i}" for i in range(20)]))


@given(fused=fused_lists, named=ids20, picked=ids20)
def test_exact_matches_come_first_and_the_rest_keep_their_order(
    fused: list[Fused], named: set[str], picked: set[str]
) -> None:
    out = exact_first(fused, named, picked)
    ids = [f.id for f in fused]
    matched = [i for i in ids if i in named] + [i for i in ids if i in picked - named]
    picked = picked | named
    assert [f.id for f in out] == matched + [i for i in ids if i not in picked]
    assert all(f.strong for f in out[: len(matched)])
    assert [f.score for f in out] == sorted((f.score for f in out), reverse=True)


@given(
    fused=fused_lists,
    docs=st.lists(st.sampled_from("xyz"), min_size=20, max_size=20),
    evidence=st.lists(st.floats(0, 1), min_size=20, max_size=20),
    weight=st.floats(0, 2),
)
def test_siblings_trade_places_but_documents_keep_theirs(
    fused: list[Fused], docs: list[str], evidence: list[float], weight: float
) -> None:
    documents = {f"c{n}": d for n, d in enumerate(docs)}
    shares = {f"c{n}": e for n, e in enumerate(evidence)}
    out = within_documents(fused, documents, shares, weight)
    assert [documents[f.id] for f in out] == [documents[f.id] for f in fused]
    assert sorted(f.id for f in out) == sorted(f.id for f in fused)
    assert [f.score for f in out] == [f.score for f in fused]
    for before, after in zip(fused, out, strict=True):
        if before.strong:
            assert after == before  # a strong match is never moved


def test_the_sibling_under_the_named_heading_takes_its_documents_first_place() -> None:
    fused = [
        Fused("a1", 0.9, None, 0.9),  # doc a, "Descaling"
        Fused("b1", 0.85, None, 0.85),  # doc b
        Fused("a2", 0.8, None, 0.8),  # doc a, "Warranty"
    ]
    documents = {"a1": "a", "a2": "a", "b1": "b"}
    out = within_documents(fused, documents, {"a2": 1.0}, 0.2)
    assert [f.id for f in out] == ["a2", "b1", "a1"]
    assert [f.score for f in out] == [0.9, 0.85, 0.8]
    # too little evidence to overturn a wide gap
    assert [f.id for f in within_documents(fused, documents, {"a2": 0.1}, 0.2)] == [
        "a1",
        "b1",
        "a2",
    ]


WORDS = (
    "Plain words follow here so that this part of the note is long enough to be a snippet "
    "of its own, as a part of a real note of some length would be, and then some more. "
) * 6


def test_a_note_titled_as_the_query_is_first_in_every_mode(shelf: Shelf, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    (root / "meeting.md").write_text(f"# Team meeting notes\n\n{WORDS}\n")
    for n in range(6):
        (root / f"other{n}.md").write_text(
            f"# Note {n}\n\nThe team met: meeting after meeting, notes on notes, the team's "
            f"meeting notes in team meetings. {WORDS}\n"
        )
    shelf.add(root)
    shelf.fusion = dataclasses.replace(shelf.fusion, exact_first=False, strong_lead=0.0)
    plain = shelf.search("team meeting notes", mode="lexical", limit=3).hits
    assert plain[0].document.rel_path != "meeting.md"  # the body's words win without it
    shelf.fusion = dataclasses.replace(shelf.fusion, exact_first=True)
    for mode in ("lexical", "vector", "hybrid"):
        hits = shelf.search("team meeting notes", mode=mode, limit=3).hits
        assert hits[0].document.rel_path == "meeting.md", mode


def test_pages_are_not_re_ordered_by_their_headings() -> None:
    from docshelf.search.evidence import by_evidence
    from docshelf.search.fusion import FusionSettings

    settings = FusionSettings(sibling_heading=1.0, exact_first=False)
    fused = [Fused("a1", 0.9, None, 0.9), Fused("a2", 0.8, None, 0.8)]
    marked = {
        "a1": chunk("a1", "kettle", path=("Descaling",)),
        "a2": chunk("a2", "kettle", path=("Warranty",)),
    }
    assert [f.id for f in by_evidence(fused, marked, "kettle warranty", settings)] == ["a2", "a1"]
    paged = {i: dataclasses.replace(c, page_start=n) for n, (i, c) in enumerate(marked.items())}
    assert [f.id for f in by_evidence(fused, paged, "kettle warranty", settings)] == ["a1", "a2"]


def test_only_the_best_of_several_quoting_snippets_is_put_first() -> None:
    from docshelf.search.evidence import by_evidence
    from docshelf.search.fusion import FusionSettings

    line = "where the river meets the sea"
    fused = [Fused("x", 0.9, None, 0.9), Fused("q1", 0.5, None, 0.5), Fused("q2", 0.4, 0.4, None)]
    found = {
        "x": chunk("x", "the sea and the river"),
        "q1": chunk("q1", f"A town {line}."),
        "q2": chunk("q2", f"Songs of {line}, again."),
    }
    out = by_evidence(fused, found, line, FusionSettings())
    assert [f.id for f in out] == ["q1", "x", "q2"]
