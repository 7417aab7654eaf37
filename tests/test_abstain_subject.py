"""Abstaining on a question whose subject the library never names (knowledge/abstain.py,
``absent_subject``; ``Retriever.unheld``): the rule with a fake model, the lookups on a
real library per user, and the whole ``ask`` with the packaged model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.embed import Embedder, local_available, make_embedder
from docshelf.ingest.worker import Worker
from docshelf.knowledge.abstain import (
    SAYS_IT,
    SUBJECT,
    absent_subject,
    carried,
    left_out,
    never_mentions,
)
from docshelf.knowledge.answer import NOT_ANSWERED
from docshelf.shelf import Shelf
from tests.fakes import WeightedWords

MODEL = "all-MiniLM-L6-v2"
QUESTION = "How does a Bloom filter trade memory for false positives?"
# how much each word weighs in the fake model's meaning of a question
WEIGHTS = {"bloom": 5.0, "filter": 3.0, "memory": 2.0, "trade": 0.5, "false": 1.0}
WEIGHTS |= {"gdpr": 2.0, "eu": 2.0, "residents": 1.5, "compliant": 3.0}
GDPR = "Is a vault GDPR compliant for the data of EU residents?"


def _model() -> WeightedWords:
    return WeightedWords(WEIGHTS, MODEL)


def _lookups(absent: set[str]) -> tuple[list[list[str]], Callable[[list[str]], list[str]]]:
    asked: list[list[str]] = []

    def unheld(words: list[str]) -> list[str]:
        asked.append(words)
        return [w for w in words if w in absent]

    return asked, unheld


def test_the_subject_the_library_never_holds_is_named_as_spelled() -> None:
    asked, unheld = _lookups({"bloom", "trade"})
    found = absent_subject(QUESTION, ["bloom", "trade"], unheld, _model(), 0.5)
    assert found == ["Bloom", "trade"] and asked == [["bloom", "trade"]]


def test_words_the_library_lacks_may_carry_the_question_together() -> None:
    # none of the three weighs as much as "compliant", all three together more
    each = [carried(_model(), GDPR, [w]) for w in ("gdpr", "eu", "residents")]
    assert max(each) < SUBJECT
    _, unheld = _lookups({"gdpr", "eu", "residents"})
    both = absent_subject(GDPR, ["gdpr", "eu", "residents"], unheld, _model(), 0.5)
    assert both == ["GDPR", "EU", "residents"]
    assert never_mentions(both) == "Your library never mentions “GDPR”, “EU” or “residents”."


def test_a_word_of_the_askers_own_the_library_lacks_is_not_a_subject() -> None:
    # "trade" is absent too, but leaving it out barely moves the question
    _, unheld = _lookups({"trade"})
    assert absent_subject(QUESTION, ["trade"], unheld, _model(), 0.5) == []


def test_a_subject_the_library_holds_is_not_absent() -> None:
    _, unheld = _lookups(set())
    assert absent_subject(QUESTION, ["bloom"], unheld, _model(), 0.5) == []


def test_no_lookup_when_a_sentence_says_it_or_the_model_is_unmeasured() -> None:
    asked, unheld = _lookups({"bloom"})
    near = SAYS_IT[MODEL]
    assert absent_subject(QUESTION, ["bloom"], unheld, _model(), near) == []
    other = _model()
    other.model_id = "another-model"
    assert absent_subject(QUESTION, ["bloom"], unheld, other, 0.1) == []
    assert absent_subject(QUESTION, ["bloom"], unheld, None, 0.1) == []
    assert absent_subject(QUESTION, [], unheld, _model(), 0.1) == []
    assert asked == []  # the library was never asked
    assert absent_subject(QUESTION, ["bloom"], unheld, _model(), near - 0.01) == ["Bloom"]


@given(st.lists(st.sampled_from([*WEIGHTS, "quicksort", "the"]), unique=True))
def test_what_words_carry_is_none_for_words_not_asked_and_one_for_the_most_telling(
    words: list[str],
) -> None:
    fake = _model()
    found = carried(fake, QUESTION, words)
    assert found >= 0.0
    if not any(left_out(QUESTION, w) != QUESTION for w in words):
        assert found == 0.0  # none of them is in the question
    assert carried(fake, QUESTION, ["bloom"]) == pytest.approx(1.0)  # the most telling
    assert carried(fake, QUESTION, ["trade"]) < SUBJECT


def test_a_word_is_left_out_whole_and_in_any_case() -> None:
    assert left_out("Bloom filters bloomed; BLOOM.", "bloom").split() == [
        "filters",
        "bloomed;",
        ".",
    ]


# -- the lookups on a real library ---------------------------------------------------------


def test_unheld_words_are_those_no_snippet_the_user_may_read_holds(
    shelf: Shelf, tmp_path: Path
) -> None:
    ann = shelf.create_user("ann")[0].id
    bob = shelf.create_user("bob")[0].id
    shelf.upload(ann, "tests.md", b"# Tests\n\nParallel tests clobber the same file.\n")
    shelf.upload(bob, "sort.md", b"# Sorting\n\nQuicksort partitions around a pivot.\n")
    worker = Worker(shelf)
    while worker.run_once():
        pass
    words = ["clobbering", "parallel", "quicksort", "zebra"]
    # the lexical engine's own forms: "clobbering" holds for a text of "clobber"
    assert shelf.retriever.unheld(words, user_id=ann) == ["quicksort", "zebra"]
    assert shelf.retriever.unheld(words, user_id=bob) == ["clobbering", "parallel", "zebra"]


# -- the whole ask, with the packaged model ------------------------------------------------

SORTING = """# Sorting algorithms

## Merge sort

Merge sort splits the list in two halves, sorts each half and merges them. It runs in
O(n log n) time in the worst case and needs extra memory for the merge.

## Insertion sort

Insertion sort builds the sorted list one item at a time. It is fast for tiny or nearly
sorted inputs and runs in quadratic time in the worst case.
"""


@pytest.mark.model
@pytest.mark.skipif(not local_available(), reason="the `local` extra is not installed")
def test_ask_abstains_on_a_subject_the_library_never_names(
    isolated_home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "sorting.md").write_text(SORTING)
    local: Embedder | None = make_embedder("local")
    with Shelf(isolated_home, embedder=local) as shelf:
        shelf.add(root)
        absent = shelf.ask("What is the worst-case running time of quicksort?")
        assert absent.answered is False and absent.answer.startswith(NOT_ANSWERED)
        assert absent.notice == never_mentions(["quicksort"]) and absent.citations
        streamed = list(shelf.ask_stream("What is the worst-case running time of quicksort?"))
        done = streamed[-1].answer
        assert done is not None and done.answered is False and done.notice == absent.notice
        # a word of the asker's own ("speedy") the notes lack does not stop an answer
        assert shelf.retriever.unheld(["speedy", "sorted"]) == ["speedy"]
        held = shelf.ask("Which sort is speedy for nearly sorted inputs?")
        assert held.answered and held.notice is None and "nearly sorted inputs" in held.answer
        assert held.citations[0].citation.heading_path[-1] == "Insertion sort"


def test_a_subject_the_cited_title_spells_out_is_held() -> None:
    """ "CAP", which no snippet holds, is the initials of words in a row of the cited
    paper's title: the library names it, spelled out."""
    title = (
        "Brewer's Conjecture and the Feasibility of Consistent, Available, "
        "Partition-Tolerant Web Services"
    )
    question = "What does the CAP theorem say about a partition?"
    _, unheld = _lookups({"cap"})
    model = WeightedWords({"cap": 8.0}, MODEL)
    assert absent_subject(question, ["cap"], unheld, model, 0.2) == ["CAP"]
    assert absent_subject(question, ["cap"], unheld, model, 0.2, [title, "Introduction"]) == []
    # typed in lower case, or not the initials of words in a row, it is not spelled out
    assert absent_subject(question.lower(), ["cap"], unheld, model, 0.2, [title]) == ["cap"]
    assert absent_subject(question, ["cap"], unheld, model, 0.2, ["Consistent Partitions"]) == [
        "CAP"
    ]
