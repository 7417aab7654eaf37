"""Text evidence at ranking time (issue 15): exact matches of the query first, and the
right section of a document chosen among that document's own snippets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.evaluate.study import heading_share, siblings, within_documents
from docshelf.model import Chunk, Tier
from docshelf.search.candidate import Candidate, Precedence, rank_key
from docshelf.search.evidence import (
    content_words,
    exact_matches,
    has_verbatim,
    names_heading,
    quoting,
    words,
)
from docshelf.search.stages.exact import exact_first
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


# fused lists as fusion leaves them: best first, the first few maybe clear firsts
fused_lists = st.tuples(
    st.lists(
        st.tuples(st.sampled_from([f"c{i}" for i in range(20)]), st.floats(0, 1)),
        max_size=15,
        unique_by=lambda t: t[0],
    ),
    st.integers(0, 3),
).map(
    lambda r: sorted(
        (
            Candidate(i, s, lexical=s, precedence=Precedence.STRONG if n < r[1] else 0)
            for n, (i, s) in enumerate(sorted(r[0], key=lambda t: -t[1]))
        ),
        key=rank_key,
    )
)


ids20 = st.sets(st.sampled_from([f"c{i}" for i in range(20)]))


@given(fused=fused_lists, named=ids20, picked=ids20)
def test_exact_matches_come_first_and_the_rest_keep_their_order(
    fused: list[Candidate], named: set[str], picked: set[str]
) -> None:
    ids = [c.id for c in fused]
    scores = {c.id: c.score for c in fused}
    exact_first(fused, named, picked - named)
    quoted = [i for i in ids if i in picked - named][:1]
    matched = [i for i in ids if i in named] + quoted
    assert [c.id for c in fused] == matched + [i for i in ids if i not in set(matched)]
    assert all(c.precedence >= Precedence.QUOTED for c in fused[: len(matched)])
    assert {c.id: c.score for c in fused} == scores  # places by precedence, scores kept
    assert sorted(fused, key=rank_key) == fused


@given(
    fused=fused_lists,
    docs=st.lists(st.sampled_from("xyz"), min_size=20, max_size=20),
    evidence=st.lists(st.floats(0, 1), min_size=20, max_size=20),
    weight=st.floats(0, 2),
)
def test_siblings_trade_places_but_documents_keep_theirs(
    fused: list[Candidate], docs: list[str], evidence: list[float], weight: float
) -> None:
    documents = {f"c{n}": d for n, d in enumerate(docs)}
    shares = {f"c{n}": e for n, e in enumerate(evidence)}
    before = [(c.id, c.score, c.precedence) for c in fused]
    out = within_documents(fused, documents, shares, weight)
    assert [documents[c.id] for c in out] == [documents[i] for i, _, _ in before]
    assert sorted(c.id for c in out) == sorted(i for i, _, _ in before)
    assert [c.score for c in out] == [s for _, s, _ in before]
    for (i, _, precedence), after in zip(before, out, strict=True):
        if precedence:
            assert after.id == i  # a clear first is never moved


def test_the_sibling_under_the_named_heading_takes_its_documents_first_place() -> None:
    def fused() -> list[Candidate]:
        return [
            Candidate("a1", 0.9, vector=0.9),  # doc a, "Descaling"
            Candidate("b1", 0.85, vector=0.85),  # doc b
            Candidate("a2", 0.8, vector=0.8),  # doc a, "Warranty"
        ]

    documents = {"a1": "a", "a2": "a", "b1": "b"}
    out = within_documents(fused(), documents, {"a2": 1.0}, 0.2)
    assert [c.id for c in out] == ["a2", "b1", "a1"]
    assert [c.score for c in out] == [0.9, 0.85, 0.8]
    # too little evidence to overturn a wide gap
    out = within_documents(fused(), documents, {"a2": 0.1}, 0.2)
    assert [c.id for c in out] == ["a1", "b1", "a2"]


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
    def fused() -> list[Candidate]:
        return [Candidate("a1", 0.9, vector=0.9), Candidate("a2", 0.8, vector=0.8)]

    marked = {
        "a1": chunk("a1", "kettle", path=("Descaling",)),
        "a2": chunk("a2", "kettle", path=("Warranty",)),
    }
    assert [c.id for c in siblings(fused(), marked, "kettle warranty", 1.0)] == ["a2", "a1"]
    paged = {i: dataclasses.replace(c, page_start=n) for n, (i, c) in enumerate(marked.items())}
    assert [c.id for c in siblings(fused(), paged, "kettle warranty", 1.0)] == ["a1", "a2"]


def test_only_the_best_of_several_quoting_snippets_is_put_first() -> None:
    line = "where the river meets the sea"
    fused = [Candidate("x", 0.9, vector=0.9), Candidate("q1", 0.5), Candidate("q2", 0.4)]
    texts = {
        "x": "the sea and the river",
        "q1": f"A town {line}.",
        "q2": f"Songs of {line}, again.",
    }
    verbatim = quoting(line, lambda: texts)
    assert verbatim == {"q1", "q2"}
    exact_first(fused, set(), verbatim)
    assert [c.id for c in fused] == ["q1", "x", "q2"]
    assert [c.score for c in fused] == [0.5, 0.9, 0.4]  # its own score, shown as it is
