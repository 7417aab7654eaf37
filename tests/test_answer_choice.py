"""Which sentences an offline answer gives (knowledge/answer.py, ``extract``): a question
that names a document's title asks what it is, and when the snippet under the title holds
no sentence (a paper's title block: its title and authors), the answer is read on from
the snippet after it, cited there (knowledge/sentences.py, ``read_on``); a sentence near
the question in meaning but short of its words does not lead the answer; a source gives
at most two sentences while another source has one to give; every hit is read, even two
of one section; a phrasal verb's particle ("down") is not a word the answer must hold."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from docshelf.knowledge.answer import extract, gather_sources
from docshelf.knowledge.sentences import Candidate, spread
from docshelf.model import Tier
from docshelf.shelf import Shelf
from tests.fakes import WeightedWords

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


def test_a_named_title_block_is_answered_by_what_follows_it(shelf: Shelf, tmp_path: Path) -> None:
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


NAME = "quorumd"
GUIDE = (
    "# Quorumd\n\n## Running it\n\n"
    "Quorumd reads one file at start-up, named after itself.\n"
    "Each line of that file sets one option and nothing else.\n"
    "The -r option sets how many replicas to keep; a sensible value is three per rack.\n"
    "The default is a single replica, which is rarely what a cluster wants.\n"
)


def test_the_nearest_sentence_answers_only_when_it_holds_the_questions_words(
    tmp_path: Path,
) -> None:
    """The sentence nearest the question in meaning but holding few of its words ("Quorumd
    reads one file …") neither leads the answer nor brings the sentence after it."""
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "quorumd.md").write_text(GUIDE)
    with Shelf(tmp_path / "home", embedder=WeightedWords({NAME: 8.0})) as shelf:
        shelf.add(tmp_path / "guide")
        answer = shelf.ask(
            "How many replicas does quorumd keep by default, and what value is suggested?"
        )
    assert answer.answer == (
        "The -r option sets how many replicas to keep; a sensible value is three per rack. [1] "
        "The default is a single replica, which is rarely what a cluster wants. [1]"
    ), answer.answer


@given(
    st.lists(st.integers(min_value=1, max_value=4), min_size=0, max_size=12),
    st.integers(min_value=1, max_value=5),
)
def test_a_source_gives_a_third_sentence_only_when_no_other_source_has_one(
    of_source: list[int], sentences: int
) -> None:
    """``spread``: as many sentences as asked (or there are), the best first; a third of
    one source only when every other source gives two or has no more (asked for three:
    only when no other source has one to give)."""
    candidates = cast(
        "list[Candidate]",
        [(SimpleNamespace(n=n), i, f"s{i}", True, None) for i, n in enumerate(of_source)],
    )
    ranked = list(range(len(candidates)))
    chosen = spread(candidates, ranked, sentences)
    assert len(chosen) == min(sentences, len(ranked)) == len(set(chosen))
    per = Counter(of_source[i] for i in chosen)
    left = [i for i in ranked if i not in chosen]
    for n, count in per.items():
        if count > 2:  # only when every other source left out already gives two
            assert all(per[of_source[i]] >= 2 for i in left if of_source[i] != n)
    assert sorted(chosen[:1]) == ranked[:1]


def test_an_offline_answer_reads_every_hit_even_two_of_one_section(
    shelf: Shelf, tmp_path: Path
) -> None:
    """Hits of one section share a source for a model (the section's text holds both),
    but an offline answer reads snippets: each hit is a source of its own, so the
    sentence of the later one is a candidate."""
    filler = [
        " ".join(
            f"Part {p} line {n} tells how the lighthouse keeper logs the weather at dawn."
            for n in range(9)
        )
        for p in range(4)
    ]
    (tmp_path / "keeper.md").write_text(
        "# Lighthouse\n\n## Duties\n\n"
        f"The keeper lights the lamp at dusk. {filler[0]}\n\n{filler[1]}\n\n{filler[2]}\n\n"
        f"{filler[3]} The lamp burns paraffin from the store below the gallery.\n"
    )
    shelf.add(tmp_path)
    hit = shelf.search("lighthouse keeper lamp dusk").hits[0]
    snippets = shelf.store.chunks_of_document(hit.document.id, Tier.SNIPPET)
    first, later = (
        dataclasses.replace(hit, chunk=next(c for c in snippets if said in c.text))
        for said in ("lights the lamp at dusk", "burns paraffin")
    )
    assert first.chunk.parent_id == later.chunk.parent_id  # one section
    assert later.chunk.id not in (first.chunk.next_id, first.chunk.prev_id)  # not beside it
    retriever = shelf.retriever
    assert len(gather_sources(retriever, [first, later], 3000)) == 1
    sources = gather_sources(retriever, [first, later], 3000, each_hit=True)
    assert [s.hit.chunk.id for s in sources] == [first.chunk.id, later.chunk.id]
    found = extract(retriever, "What fuel does the lighthouse lamp burn?", sources)
    assert "The lamp burns paraffin from the store below the gallery." in found.text, found.text


SLOW = (
    "# Slow vaults\n\n## Finding the plugin\n\n"
    "To find the plugin that slows things, turn the plugins off one at a time.\n\n"
    "## Snapshots\n\n"
    "A snapshot can narrow down the slow code of a plugin for its author.\n"
)


def test_a_phrasal_verbs_particle_is_not_what_the_question_asks_about(tmp_path: Path) -> None:
    """'slowing the vault down': the sentence that says how to find the plugin answers. A
    sentence holding "plugin", "slow" and a "down" of its own ("narrow down") does not
    leave it short of the best one's share of the question's words (it did: the answer was
    the snapshot sentence alone)."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "slow.md").write_text(SLOW)
    with Shelf(tmp_path / "home", embedder=WeightedWords({"down": 8.0})) as shelf:
        shelf.add(tmp_path / "notes")
        answer = shelf.ask("Which plugin is slowing the vault down?")
    assert answer.answer.startswith(
        "To find the plugin that slows things, turn the plugins off one at a time. [1]"
    ), answer.answer


CONSISTENCY = (
    "# Consistency notes\n\n## Our store\n\n"
    "Our store keeps linearizability for every key, even while nodes join and leave.\n\n"
    "## References\n\n"
    "Linearizability: a correctness condition for concurrent objects. ACM TOPLAS, 1990.\n"
)


def test_an_entry_of_a_list_of_works_cited_is_never_an_answers_sentence(
    shelf: Shelf, tmp_path: Path
) -> None:
    """A bibliography's entry holds the question's words as another work's title; it
    says nothing of them (knowledge/sentences.py, ``_WORKS_CITED``)."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "consistency.md").write_text(CONSISTENCY)
    shelf.add(tmp_path / "notes")
    answer = shelf.ask("What is linearizability?")
    assert "keeps linearizability for every key" in answer.answer, answer.answer
    assert "correctness condition" not in answer.answer, answer.answer


def test_a_papers_reference_mark_does_not_cut_its_sentence_in_two(
    shelf: Shelf, tmp_path: Path
) -> None:
    """ "Glendenning et al. [12] built …": the mark is taken out before the text is cut
    into sentences, so "et al." followed by "[12]" ends no sentence."""
    from tests.fixtures_formats import paged_pdf

    paper = tmp_path / "papers" / "stores.pdf"
    paper.parent.mkdir()
    lines = [
        "Many works have focused on the consistency of key-value stores.",
        "Glendenning et al. [12] built a linearizable key-value store tolerant of churn.",
    ]
    paper.write_bytes(paged_pdf([lines]))
    shelf.add(paper.parent)
    answer = shelf.ask("Who built a linearizable key-value store tolerant of churn?")
    assert (
        "Glendenning et al. built a linearizable key-value store tolerant of churn. [1]"
        in answer.answer
    ), answer.answer
