"""An offline answer's lead-in brings the list it introduces (knowledge/sentences.py,
``with_block``; ``plaintext.introduced``): when its colon sits inside emphasis, when the
list begins the next snippet, and when its items are label lines or a loose list; an item
it brought is not said again."""

from __future__ import annotations

from pathlib import Path

from docshelf.model import Tier
from docshelf.plaintext import introduced
from docshelf.shelf import Shelf

# a paragraph that fills most of a snippet, so the list after its lead-in starts the next
FILLER = " ".join(
    f"Sentence {i} of the long paragraph says a little more about how a data race comes to be."
    for i in range(7)
)
NOTE = (
    "# Races\n\n## Data races\n\n"
    f"{FILLER} A data race happens when these three behaviors occur:\n\n"
    "- Two or more pointers access the same data at the same time, from threads that each "
    "believe they have it to themselves for as long as the work takes.\n"
    "- At least one of the pointers is being used to write to the data, while the others "
    "read what may be half written at that moment.\n"
    "- There is no mechanism being used to synchronize access to the data, no lock, no "
    "channel and no atomic operation of any kind.\n\n"
    "Data races cause undefined behavior.\n"
)


def test_a_colon_inside_emphasis_ends_a_lead_in() -> None:
    text = (
        "**You can add region markers using:**\n\n"
        "- `/*#region*/` at the start\n- `/*#endregion*/` at the end\n"
    )
    assert introduced(text) == {
        "You can add region markers using:": "/*#region*/ at the start, /*#endregion*/ at the end"
    }


def test_a_lead_in_brings_label_lines_and_a_loose_list_past_blank_and_quoted_lines() -> None:
    shares = (
        "Measured last spring, the readers are spread as follows:\n"
        "**Paper** — 61.5%\n> weekday: 70%\n> weekend: 30%\n\n"
        "**Tablet** — 27.0%\n\n**Phone** — 11.5%\n\n## Method\n"
    )
    assert introduced(shares) == {
        "Measured last spring, the readers are spread as follows:": (
            "Paper — 61.5%, Tablet — 27.0%, Phone — 11.5%"
        )
    }
    loose = "Pack these:\n\n- a lamp\n\n- a rope\n\nThe rest stays home.\n\n- a tent\n"
    assert introduced(loose) == {"Pack these:": "a lamp, a rope"}
    # in plain text a line with a dash is no label line
    assert introduced("Spread as follows:\nPaper — 61.5%\n", "plain") == {}


def test_a_lead_in_does_not_bring_a_template_directive_for_code() -> None:
    """A docs build's include ("{{#rustdoc_include …}}") stands where code will be: it
    is not brought as the code."""
    only = "the arm will run:\n\n```rust\n{{#rustdoc_include ../listings/a.rs:here}}\n```\n"
    assert introduced(only) == {}
    mixed = "run:\n\n```rust\n{{#include a.rs}}\n{% raw %}\nfn main() {}\n```\n"
    assert introduced(mixed) == {"run:": "fn main() {}"}


def test_a_lead_in_brings_its_list_from_the_next_snippet_and_says_each_item_once(
    shelf: Shelf, tmp_path: Path
) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "races.md").write_text(NOTE)
    shelf.add(tmp_path / "notes")
    doc = shelf.search("data race behaviors").hits[0].document
    snippets = shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)
    lead = next(c for c in snippets if "three behaviors occur:" in c.text)
    assert "Two or more pointers" not in lead.text  # the list begins the next snippet
    answer = shelf.ask("When does a data race happen, which three behaviors?")
    assert (
        "these three behaviors occur: Two or more pointers access the same data at the same "
        "time, from threads"
    ) in answer.answer
    assert answer.answer.count("Two or more pointers") == 1


def test_a_sentence_two_places_repeat_is_said_once(shelf: Shelf, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "config.md").write_text(
        "# Configuration\n\n## UPLOAD_LIMIT\n\nThe most bytes an upload may hold. "
        "If it is set to None, no limit is enforced at the application level.\n\n"
        "## FORM_LIMIT\n\nThe most bytes a form may hold in memory. "
        "If it is set to None, no limit is enforced at the application level.\n"
    )
    shelf.add(tmp_path / "notes")
    answer = shelf.ask("What happens when the limit is set to None?")
    assert answer.answer.count("no limit is enforced") == 1, answer.answer


def test_a_lead_in_brings_a_list_bulleted_as_a_pdf_or_word_file_writes_it() -> None:
    """A PDF's or a Word file's text carries its list's bullets as characters (•, ◦, ▪, ‣):
    a theorem's "guarantees the following properties:" brings them."""
    theorem = (
        "It is impossible to implement a read/write data object that guarantees the "
        "following properties:\n\n• Availability\n\n• Atomic consistency\n\n"
        "in all executions (even those in which messages are lost).\n"
    )
    lead = (
        "It is impossible to implement a read/write data object that guarantees the "
        "following properties:"
    )
    assert introduced(theorem, "plain") == {lead: "Availability, Atomic consistency"}
    nested = "Steps:\n\u25e6 open the file\n\u25aa read it\n\u2023 close it\n"
    assert introduced(nested, "plain") == {"Steps:": "open the file, read it, close it"}
    # a bullet on a line of its own, its item's text on the next, is no item
    assert introduced("Steps:\n\u2022\nopen the file\n", "plain") == {}
