"""Abstaining when the answer states nothing of the kind the question asks for
(knowledge/abstain.py, ``untyped``): "how many" answered with no number, "in what year"
with no year."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.knowledge.abstain import untyped
from docshelf.shelf import Shelf
from tests.asking import abstains, library

GUIDE = (
    "# Serving\n\n## Waitress\n\n"
    "Waitress serves the application with many thread workers of its own.\n"
    "The only required argument to waitress-serve tells it how to load the application.\n\n"
    "## Gunicorn\n\n"
    "Gunicorn runs one worker process by default, which is probably not what you want.\n"
    "A starting value for the number of workers could be twice the number of cores.\n"
)


def test_a_count_asked_for_and_none_stated_is_untyped() -> None:
    loads = ["The only required argument to waitress-serve tells it how to load the app. [1]"]
    assert untyped("How many worker threads does Waitress start?", loads) == "number"
    assert untyped("How long does verifying take?", loads) == "number"
    assert untyped("What share of users run Linux?", loads) == "number"
    assert untyped("What worker timeout does it use by default?", loads) == "number"
    assert untyped("Which maximum upload sizes apply?", loads) == "number"
    assert untyped("What auto-save delay?", ["It is set to 1000 milliseconds."]) is None
    # a citation mark is not a number the answer states
    assert untyped("How many threads?", ["It uses threads. [3]"]) == "number"
    # a flag's value in an example command, a digit in a name: no count stated
    example = "Take a look at the following example: $ cargo test -- --test-threads=1 [1]"
    assert untyped("By default, how many threads does it use?", [example]) == "number"
    assert untyped("How many targets?", ["It builds for x86_64 and aarch64."]) == "number"
    counts = ("It starts 4 threads.", "Never more than four.", "Only a single one.", "(12.1%)")
    for stated in counts:
        assert untyped("How many threads does it start?", [stated]) is None
    # a question that asks no quantity wants none
    assert untyped("Which server should I use?", loads) is None
    assert untyped("What value does the header take?", loads) is None
    assert untyped("When hunting for a slow plugin, what do you switch off?", loads) is None


def test_a_year_asked_for_wants_a_year_not_any_number() -> None:
    said = ["The platform comprises more than 61,000 servers in 70 countries. [1]"]
    assert untyped("In what year did the platform pass 100,000 servers?", said) == "year"
    assert untyped("Which year was it?", ["It was given at the summer school 2000. [1]"]) is None
    assert untyped("Which year was it?", ["It ran 2.1000 times faster."]) == "year"
    # a year answers "how many" too: it is a number
    assert untyped("How many years ago, since 1998?", ["Since 1998. [1]"]) is None


@given(st.integers(min_value=1000, max_value=2099))
def test_every_year_standing_alone_is_a_year(year: int) -> None:
    assert untyped("In what year?", [f"It happened in {year}, after the war."]) is None
    assert untyped("In what year?", [f"It cost {year // 1000},{year % 1000:03d} dollars."]) == (
        "year"
    )


def test_an_answer_with_no_number_to_how_many_abstains(shelf: Shelf, tmp_path: Path) -> None:
    library(shelf, tmp_path / "guide", {"serving.md": GUIDE})
    question = "How many worker threads does Waitress start by default?"
    abstains(shelf, question, "The closest passages state no number.")
    gunicorn = shelf.ask("How many worker processes does Gunicorn run by default?")
    assert gunicorn.answered is True and "one worker process" in gunicorn.answer, gunicorn.answer
