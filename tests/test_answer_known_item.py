"""A question that names a document's title asks what it is: when the snippet under the
title holds no sentence (a paper's title block: its title and authors), the answer is
read on from the snippet after it, cited there (knowledge/sentences.py, ``read_on``)."""

from __future__ import annotations

from pathlib import Path

from docshelf.shelf import Shelf

# an abstract too long to share a snippet with the title block above it
MORE = " ".join(
    f"Experiment {i} of the evaluation measured how the queue behaves when disk {i} is slow."
    for i in range(12)
)
PAPER = (
    "# Braided Logs for Durable Queues\n\n"
    "Ada Quill, Basil Fenwick\n\n"
    "Northfield Institute of Computing\n\n"
    "## Abstract\n\n"
    "Braided logs keep a durable queue on three disks that fail independently. "
    f"A write is acknowledged once two of the disks hold it. {MORE}\n\n"
    "## Evaluation\n\n"
    "Durable queues built on braided logs served twice the writes of a single log.\n"
)


def test_a_named_title_block_is_answered_by_what_follows_it(
    shelf: Shelf, tmp_path: Path
) -> None:
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "braided.md").write_text(PAPER)
    shelf.add(tmp_path / "papers")
    first = shelf.search("Braided Logs for Durable Queues").hits[0]
    assert first.placed_by[:1] == ("named",)
    assert "Ada Quill" in first.chunk.text and "Braided logs keep" not in first.chunk.text
    answer = shelf.ask("Braided Logs for Durable Queues")
    assert answer.answer.startswith(
        "Braided logs keep a durable queue on three disks that fail independently. [1]"
    ), answer.answer
    assert answer.citations[0].citation.heading_path[-1] == "Abstract"
