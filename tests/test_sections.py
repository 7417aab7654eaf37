"""The right section first (issue 15): section evidence at ranking time, and citations
kept de-duplicated — one (file, heading path or page) once unless every snippet is asked
for."""

from __future__ import annotations

from pathlib import Path

from docshelf.evaluate.study import Study, by_section, study_ranking
from docshelf.search.candidate import Candidate, Precedence
from docshelf.shelf import Shelf

WORDS = (
    "Plain words follow here so that this part of the note is long enough to be a snippet "
    "of its own, as a part of a real note of some length would be, and then some more. "
) * 8


def test_by_section_is_the_identity_when_off() -> None:
    fused = [Candidate("a", 0.9, 1.0, 0.9), Candidate("b", 0.5, None, 0.5)]
    by_section(fused, {"a": 1, "b": 2}, {"b": 1.0}, 0.0, 0.0)
    assert [(c.id, c.score) for c in fused] == [("a", 0.9), ("b", 0.5)]


def test_a_heading_that_names_the_query_lifts_its_snippet() -> None:
    def fused() -> list[Candidate]:
        return [Candidate("a", 0.9, 1.0, 0.9), Candidate("b", 0.85, None, 0.85)]

    out = fused()
    by_section(out, {"a": 1, "b": 2}, {"b": 1.0, "a": 0.0}, 0.1, 0.0)
    assert [c.id for c in out] == ["b", "a"]
    assert out[0].score == 0.85 + 0.1 * 0.9 and out[0].vector == 0.85  # parts kept
    half = fused()
    by_section(half, {"a": 1, "b": 2}, {"b": 0.5}, 0.1, 0.0)  # half the words: not enough
    assert [c.id for c in half] == ["a", "b"]


def test_a_place_several_snippets_point_at_wins() -> None:
    # c and d are two snippets of one section; a is alone in another
    out = [Candidate("a", 0.9, None, 0.9), Candidate("c", 0.8, None, 0.8)]
    out.append(Candidate("d", 0.6, None, 0.6))
    by_section(out, {"a": "one", "c": "two", "d": "two"}, {}, 0.0, 0.25)
    assert [c.id for c in out] == ["c", "a", "d"]
    assert out[0].score == 0.8 + 0.25 * 0.6


def test_a_strong_first_stays_in_front() -> None:
    out = [Candidate("a", 0.1, 9.0, 0.1, precedence=Precedence.STRONG), Candidate("b", 0.9)]
    by_section(out, {"a": 1, "b": 2}, {"b": 1.0}, 1.0, 0.0)
    assert [c.id for c in out] == ["a", "b"]


def _manual(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "manual.md").write_text(
        "# Kettle manual\n\n"
        "## Descaling\n\n"
        f"Descale the kettle with vinegar once a month: a kettle, kettle, kettle. {WORDS}\n\n"
        f"Rinse the kettle after descaling. {WORDS}\n\n"
        f"Descaling again keeps the kettle quiet. {WORDS}\n\n"
        "## Warranty\n\n"
        f"Two years of cover from the day of purchase. {WORDS}\n"
    )
    return root


def test_citations_are_de_duplicated_unless_every_snippet_is_asked_for(
    shelf: Shelf, tmp_path: Path
) -> None:
    shelf.add(_manual(tmp_path / "lib"))
    every = shelf.search("kettle descaling", mode="lexical", limit=10, group="all").hits
    places = [(h.document.id, h.chunk.heading_path, h.chunk.page_start) for h in every]
    assert len(places) > len(set(places))  # several snippets under one heading
    cited = shelf.search("kettle descaling", mode="lexical", limit=10).hits
    once = [(h.document.id, h.chunk.heading_path, h.chunk.page_start) for h in cited]
    assert len(once) == len(set(once)) == len(set(places))
    assert cited[0].chunk.id == every[0].chunk.id  # each place keeps its best snippet


def test_the_snippet_under_the_named_heading_comes_first(shelf: Shelf, tmp_path: Path) -> None:
    shelf.add(_manual(tmp_path / "lib"))
    query = "kettle warranty"
    hits = shelf.search(query, mode="vector", limit=3).hits
    assert hits[0].chunk.heading_path[-1] == "Descaling"  # the body's words win without it
    shelf.ranking = study_ranking(shelf.fusion, Study(heading_boost=1.0))
    hits = shelf.search(query, mode="vector", limit=3).hits
    assert hits[0].chunk.heading_path[-1] == "Warranty"
