"""Abstaining when the documents an answer cites never name what the question names
(knowledge/abstain.py, ``names`` and ``unnamed``): the plugin ID of "Canvas" answered
with Outline's, from a page that lists every core plugin but that one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from docshelf.knowledge.abstain import names, never_named, unnamed
from docshelf.shelf import Shelf
from tests.asking import abstains, library

CORE = (
    "# Core plugins\n\n"
    "## Outline\n\nShows the headings of the current note as a tree.\n\n"
    "Plugin ID: outline.\n\n"
    "## Quick switcher\n\nJumps to another file by its name.\n\n"
    "Plugin ID: switcher.\n"
)
NEWS = (
    "# Release notes\n\n## Canvas\n\n"
    "Canvas lays out notes, images and web pages on an endless board.\n"
)


def test_the_names_of_a_question_are_its_capitalised_words_inside_a_sentence() -> None:
    asked = "What is the internal plugin ID of Obsidian's Canvas core plugin?"
    assert names(asked) == ["ID", "Obsidian", "Canvas"]
    assert names("In Hoare's CSP book, how many philosophers may sit?") == ["Hoare", "CSP"]
    # a sentence's or a quote's first word is no name; nor is a stopword, nor a letter
    assert names("Gunicorn runs workers. Which Flask docs say so?") == ["Flask"]
    assert names('Who said "Premature optimisation" and The A team?') == []
    # a question typed in capitals, as a title, names nothing by them
    assert names("Obsidian Sync Conflict Resolution") == []
    assert names("HOW DO I INSTALL THE CANVAS PLUGIN?") == []
    assert names("What does the Obsidian Sync guide say?") == ["Obsidian", "Sync"]


def lookup(holders: dict[str, set[str]], scope: str) -> Callable[[list[str]], list[str]]:
    """A lexical lookup of the words no document of ``scope`` holds."""
    return lambda words: [w for w in words if scope not in holders.get(w, set())]


def test_a_name_only_another_document_holds_is_unnamed() -> None:
    holders = {"Canvas": {"library"}, "Obsidian": {"cited", "library"}, "ID": {"cited", "library"}}
    there, anywhere = lookup(holders, "cited"), lookup(holders, "library")
    asked = "What is the plugin ID of Obsidian's Canvas core plugin?"
    assert unnamed(asked, ["Core plugins"], there, anywhere) == ["Canvas"]
    # a name the library never holds is the subject rule's to weigh, not this one's
    assert unnamed("What is the plugin ID of the Kanban plugin?", [], there, anywhere) == []
    # a cited title's initials name it: "CSP" for "Communicating Sequential Processes"
    book = ["Communicating Sequential Processes", "2.5 Example: The Dining Philosophers"]
    holders["CSP"] = {"library"}
    assert unnamed("In the CSP book, how many sit?", book, there, anywhere) == []
    assert unnamed("In the CSP book, how many sit?", ["Core plugins"], there, anywhere) == ["CSP"]
    # a word of a cited title is held, though the text may never say it
    holders["README"] = {"library"}
    assert unnamed("What does the README say?", ["README", "Install"], there, anywhere) == []
    assert unnamed("What does the README say?", ["Core plugins"], there, anywhere) == ["README"]


def test_an_answer_from_documents_that_never_name_the_question_s_name_abstains(
    shelf: Shelf, tmp_path: Path
) -> None:
    library(shelf, tmp_path / "vault", {"Core plugins.md": CORE, "Release notes.md": NEWS})
    question = "What is the internal plugin ID of the core plugin Canvas?"
    canvas = abstains(shelf, question, never_named(["Canvas"]))
    assert {c.citation.title for c in canvas.citations} == {"Core plugins"}, canvas.citations
    assert never_named(["Canvas"]) == "The closest passages' documents never name “Canvas”."
    outline = shelf.ask("What is the internal plugin ID of the core plugin Outline?")
    assert outline.answered is True and "outline" in outline.answer, outline.answer
