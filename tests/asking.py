"""Asking a small library made in a test: its files written and added, and an answer
that abstains checked as every face shows it (``answered`` false, the answer saying so,
the notice naming why)."""

from __future__ import annotations

from pathlib import Path

from docshelf.knowledge.answer import NOT_ANSWERED, Answer
from docshelf.shelf import Shelf


def library(shelf: Shelf, folder: Path, files: dict[str, str]) -> None:
    """``files`` (name: text) written in ``folder`` and added to ``shelf``."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    shelf.add(folder)


def abstains(shelf: Shelf, question: str, notice: str) -> Answer:
    """``question``'s answer, which must abstain with ``notice``."""
    answer = shelf.ask(question)
    assert answer.answered is False and answer.answer.startswith(NOT_ANSWERED), answer
    assert answer.notice == notice
    return answer
