"""Grounded answers: offline extractive, LLM with citation verification, failures."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.errors import InvalidInput, NotFound, Unavailable
from docshelf.knowledge.answer import (
    NOT_ANSWERED,
    cited_numbers,
    extract,
    gather_sources,
    grounded,
)
from docshelf.knowledge.sentences import Source, plain_sentences
from docshelf.llm import Message
from docshelf.llm.openai import OpenAILLM
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server


@pytest.fixture
def library(shelf: Shelf, notes: Path) -> Shelf:
    shelf.add(notes)
    return shelf


def test_citation_helpers() -> None:
    assert cited_numbers("A [1]. B [2, 3][4]. C.") == [1, 2, 3, 4]


def test_a_model_s_sentence_stands_when_what_it_cites_says_it(library: Shelf) -> None:
    hit = library.search("heartbeat", mode="lexical").hits[0]
    raft = Source(1, hit, "A follower that hears no heartbeat becomes a candidate.")
    bread = Source(2, hit, "Bread needs flour, water and yeast.")
    given = [raft, bread]
    assert grounded("A follower without a heartbeat becomes a candidate [1].", given)
    assert grounded("Without a heartbeat a follower stands for election [1].", given)  # half
    assert grounded("It becomes a candidate [2][1].", given)  # one source holds it
    assert not grounded("A follower becomes a candidate.", given)  # cites nothing
    assert not grounded("A follower becomes a candidate [3].", given)  # not given
    assert not grounded("Raft was invented at Stanford in 2014 [1].", given)  # invented
    assert not grounded("A follower becomes a candidate [1]. Flour [7].", given)


def test_extractive_answer_offline(library: Shelf) -> None:
    answer = library.ask("what does a follower do when it hears no heartbeat?")
    assert answer.mode == "extractive" and answer.notice is None
    assert "heartbeat" in answer.answer
    numbers = set(cited_numbers(answer.answer))
    assert numbers and numbers == {c.n for c in answer.citations}
    assert all(c.label.startswith("Raft (projects/raft.md#") for c in answer.citations if c.n == 1)
    with pytest.raises(InvalidInput):
        library.ask("   ")


def test_no_hits_says_so(shelf: Shelf) -> None:
    answer = shelf.ask("anything at all")
    assert answer.citations == [] and "No document" in answer.answer


def test_llm_answer_with_valid_citations(library: Shelf) -> None:
    script = Script(("ok", "A follower becomes a candidate and asks for votes [1]."))
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("what happens without a heartbeat?")
    assert answer.mode == "llm"
    assert [c.n for c in answer.citations] == [1]
    prompt = script.requests[0]["messages"][1]["content"]
    assert "[1] (Raft (projects/raft.md#" in prompt and "Question:" in prompt


def test_a_citation_to_nothing_retrieved_never_reaches_the_user(library: Shelf) -> None:
    invented = "Raft was invented in 2014 [7]."
    script = Script(("ok", invented), ("ok", "Candidates ask for votes [1]."))
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election", limit=3)
    assert answer.mode == "llm" and "[7]" not in answer.answer
    assert "Use only [1]" in script.requests[1]["messages"][1]["content"]

    stubborn = Script(("ok", invented), ("ok", f"{invented} Votes decide [1]."))
    with fake_llm_server(stubborn) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election", limit=3)
    assert answer.answer == "Votes decide [1]." and answer.mode == "llm"

    unsupported = Script(("ok", "Votes decide [1]. Raft won a Turing award in 2016 [1]."))
    with fake_llm_server(unsupported) as url:  # a source given, but it never says that
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election", limit=3)
    assert answer.answer == "Votes decide [1]." and len(unsupported.requests) == 1

    hopeless = Script(("ok", invented), ("ok", invented))
    with fake_llm_server(hopeless) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election", limit=3)
    assert answer.mode == "extractive" and "[7]" not in answer.answer
    assert answer.notice and "grounded" in answer.notice
    assert all(c.n <= 3 for c in answer.citations)


def test_llm_retries_429_and_malformed_then_falls_back(library: Shelf) -> None:
    script = Script(("status", 429), ("raw", "{not json"), ("ok", "Votes are requested [1]."))
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election")
    assert answer.mode == "llm" and len(script.requests) == 3

    down = Script(("status", 503), ("status", 503), ("status", 503))
    with fake_llm_server(down) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        answer = library.ask("leader election")
    assert answer.mode == "extractive" and answer.notice and "LLM failed" in answer.notice


def test_llm_timeout_and_refusal() -> None:
    slow = Script(("sleep", 1.0), ("sleep", 1.0))
    with fake_llm_server(slow) as url:
        llm = OpenAILLM(url, "m", timeout=0.2, attempts=2, backoff=0.01)
        with pytest.raises(Unavailable, match="timed out"):
            llm.complete([Message("user", "hi")])
    refused = Script(("status", 401))
    with fake_llm_server(refused) as url:
        with pytest.raises(Unavailable, match="refused"):
            OpenAILLM(url, "m", attempts=3).complete([Message("user", "hi")])
        assert len(refused.requests) == 1  # a 401 is not retried


def test_ask_envelope(notes: Path) -> None:
    runner = CliRunner()
    env = {"DOCSHELF_EMBEDDER": "none"}
    runner.invoke(app, ["--json", "add", str(notes)], env=env)
    result = runner.invoke(app, ["--json", "ask", "sourdough starter"], env=env)
    envelope = json.loads(result.stdout)
    assert envelope["ok"] and envelope["command"] == "ask"
    assert set(envelope["result"]) >= {"answer", "mode", "citations"}
    assert envelope["result"]["mode"] == "extractive"
    c = envelope["result"]["citations"][0]
    assert set(c) == {"n", "chunk_id", "label", "citation"}
    # the hit's whole citation, as search gives it: where to open it
    assert c["citation"]["label"] == c["label"] and c["citation"]["path"].endswith(".md")
    assert {"heading_path", "title", "page_start", "chunk_index"} <= set(c["citation"])


# -- the offline answer reads as an answer ---------------------------------------------------

MARKED_UP = """# Raft

## Leader election

A **follower** that hears no heartbeat becomes a [[Candidate|candidate]] and asks for votes.
- It votes for [[Raft#Terms]] once per term
- see [the paper](https://example.org/raft.pdf) and `election_timeout`
%% a comment the reader never sees %%
> A quoted _remark_ about leaders.

A partial line with no end
"""


def test_plain_sentences_drop_markdown_and_obsidian_markup() -> None:
    assert plain_sentences(MARKED_UP) == [
        "A follower that hears no heartbeat becomes a candidate and asks for votes.",
        "It votes for Raft once per term.",
        "see the paper and election_timeout.",
        "A quoted remark about leaders.",
    ]  # no heading line, no fragment, no [[ ]], ** or list marker


BIGTABLE = (
    "# Bigtable\n\n"
    "Bigtable is a distributed storage system for structured data at Google. "
    "Bigtable clusters hold petabytes of data across thousands of machines.\n\n"
    "## Tablets\n\n"
    "The Bigtable master assigns tablets to tablet servers and balances tablet-server load. "
    "A tablet is a contiguous range of rows of a table, about 100 to 200 MB in size. "
    "Clients of Bigtable rarely talk to the master.\n"
)


def test_the_answer_sentence_is_the_one_about_what_was_asked(shelf: Shelf, tmp_path: Path) -> None:
    root = tmp_path / "papers"
    root.mkdir()
    (root / "bigtable.md").write_text(BIGTABLE)
    shelf.add(root)
    answer = shelf.ask("What is a tablet in Bigtable?")
    assert answer.mode == "extractive"
    first = answer.answer.split(" [")[0]
    assert (
        first == "A tablet is a contiguous range of rows of a table, about 100 to 200 MB in size."
    )
    assert "master" not in answer.answer.split("[1]")[0]


def test_a_sentence_is_read_under_its_heading(shelf: Shelf, tmp_path: Path) -> None:
    """The sentence that answers names only part of what was asked; its heading names
    the rest."""
    root = tmp_path / "book"
    root.mkdir()
    (root / "data-types.md").write_text(
        "# Data Types\n\n## Integer Types\n\nRust has signed and unsigned integer types. "
        "An integer literal without a suffix is an i32.\n\n## Floating-Point Types\n\n"
        "Rust also has two primitive types for floating-point numbers, f32 and f64. "
        "Both of them are always signed. The default is f64 because on modern CPUs it is "
        "about as fast as f32 and more precise.\n"
    )
    shelf.add(root)
    answer = shelf.ask("Which floating-point type is the default?")
    assert answer.mode == "extractive"
    assert "The default is f64 because" in answer.answer, answer.answer


def _sentences(text: str) -> list[tuple[str, int]]:
    """(sentence, n) of an answer whose sentences each end in one ``[n]``."""
    return [(m.group(1).strip(), int(m.group(2))) for m in re.finditer(r"(.+?) \[(\d+)\]", text)]


def test_offline_answer_is_clean_ordered_and_numbered_from_one(
    shelf: Shelf, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "raft.md").write_text(
        "# Raft\n\n## Election\n\n"
        "- A **follower** waits for a [[Heartbeat|heartbeat]] from the leader.\n"
        "- A follower without a heartbeat becomes a candidate.\n"
        "- The candidate that wins the election becomes the leader.\n"
    )
    (root / "bread.md").write_text("# Bread\n\nFlour, water and salt make a dough.\n")
    (root / "zab.md").write_text(
        "# Zab\n\nIn Zab a follower that misses a heartbeat starts an election.\n"
    )
    shelf.add(root)
    answer = shelf.ask("What does a follower do without a heartbeat?")
    for mark in ("[[", "]]", "**", "#", "- "):
        assert mark not in answer.answer
    numbers = cited_numbers(answer.answer)
    assert list(dict.fromkeys(numbers)) == list(range(1, max(numbers) + 1))  # 1..n, no gaps
    assert [c.n for c in answer.citations] == list(range(1, max(numbers) + 1))
    assert "Flour" not in answer.answer  # a sentence sharing no key term is not an answer
    by_source: dict[int, list[str]] = {}
    for sentence, n in _sentences(answer.answer):
        by_source.setdefault(n, []).append(sentence)
    raft = next(c.n for c in answer.citations if c.label.startswith("Raft"))
    text = (
        (root / "raft.md")
        .read_text()
        .replace("**", "")
        .replace("[[Heartbeat|", "")
        .replace("]]", "")
    )
    positions = [text.index(s.rstrip(".")) for s in by_source[raft]]
    assert len(positions) >= 2 and positions == sorted(positions)  # as they read in the note
    assert [n for _, n in _sentences(answer.answer)] == sorted(numbers)  # sources in rank order


def test_weak_evidence_says_no_passage_answers_and_shows_the_closest(library: Shelf) -> None:
    # The vector side finds something for any words; no sentence holds these.
    weak = library.ask("zebra quantum chromodynamics")
    assert weak.citations, "the hybrid search returned nothing to answer from"
    assert weak.answered is False and weak.answer.startswith(NOT_ANSWERED)
    assert len(cited_numbers(weak.answer)) == 1  # the closest passage, cited
    strong = library.ask("what do you feed the starter with?")
    assert strong.answered and strong.notice is None and "flour" in strong.answer
    streamed = list(library.ask_stream("zebra quantum chromodynamics"))
    assert streamed[-1].answer is not None and streamed[-1].answer.answered is False
    text = "".join(p.text for p in streamed if p.kind == "text")
    assert text == weak.answer  # the stream says it too, first


def test_abstaining_needs_a_key_word_and_for_a_measured_model_a_near_sentence() -> None:
    from docshelf.knowledge.abstain import SIMILARITY, answers

    floor = SIMILARITY["all-MiniLM-L6-v2"]
    assert not answers(0.0, 0.9, "all-MiniLM-L6-v2")  # no key word in any sentence
    assert answers(0.2, floor, "all-MiniLM-L6-v2")
    assert not answers(0.9, floor - 0.01, "all-MiniLM-L6-v2")  # far in meaning from all
    assert answers(0.9, 0.0, "another-model")  # a threshold holds for its own model only
    assert answers(0.9, None, None)  # no embedder: the words decide


@pytest.mark.parametrize(
    ("text", "read"),
    [
        (
            "Chain replication gives high throughput [4] and strong consistency [12, 13].",
            "Chain replication gives high throughput and strong consistency.",
        ),
        ("[7] Lamport showed it first [3-5].", "Lamport showed it first."),
        ("Index v[1] or follow [a][1] as written.", "Index v[1] or follow [a][1] as written."),
    ],
)
def test_a_papers_own_reference_marks_never_read_as_citations(text: str, read: str) -> None:
    from docshelf.knowledge.sentences import without_reference_marks

    assert without_reference_marks(text) == read
    if read != text:  # what was taken out was all that read as a citation
        assert cited_numbers(read) == []


def test_an_answer_from_a_paper_cites_only_its_sources(shelf: Shelf, tmp_path: Path) -> None:
    from tests.fixtures_formats import paged_pdf

    paper = tmp_path / "papers" / "chain.pdf"
    paper.parent.mkdir()
    paper.write_bytes(
        paged_pdf(
            [
                [
                    "Chain replication offers high throughput and strong consistency [4].",
                    "The tail of the chain answers every query [7, 9].",
                ]
            ]
        )
    )
    shelf.add(paper.parent)
    answer = shelf.ask("Which server of the chain answers queries?")
    assert "tail of the chain answers every query" in answer.answer
    assert set(cited_numbers(answer.answer)) == {c.n for c in answer.citations} == {1}


def test_a_follow_up_is_searched_with_the_question_before_it(library: Shelf) -> None:
    from docshelf.knowledge.conversations import follows_up

    assert follows_up("and how do I change it?") and follows_up("why?")
    assert not follows_up("How long should sourdough starter ferment overnight")
    first = library.ask("How does a follower become a candidate?", conversation="new")
    assert first.conversation and first.conversation.startswith("cv_")
    # alone, "what happens next?" has nothing to go on; in the thread it is about Raft
    alone = library.ask("what happens next?")
    follow = library.ask("what happens next?", conversation=first.conversation)
    assert follow.conversation == first.conversation and follow.question == "what happens next?"
    assert any("raft" in c.citation.path for c in follow.citations)
    assert follow.answer != alone.answer
    # a question that stands alone is searched as it is, mid-conversation
    bread = library.ask(
        "What do you feed the sourdough starter with?", conversation=first.conversation
    )
    assert "flour" in bread.answer
    kept = library.store.conversation(first.conversation)
    assert kept is not None and [t.question for t in kept[1]] == [
        "How does a follower become a candidate?",
        "what happens next?",
        "What do you feed the sourdough starter with?",
    ]
    assert kept[1][1].asked.startswith("what happens next? How does a follower")
    streamed = list(library.ask_stream("and then?", conversation=first.conversation))
    assert (
        streamed[-1].answer is not None and streamed[-1].answer.conversation == first.conversation
    )


def test_a_conversation_is_its_user_s(library: Shelf) -> None:
    ann, _ = library.create_user("ann")
    bob, _ = library.create_user("bob")
    theirs = library.ask(
        "How does a follower become a candidate?", user_id=ann.id, conversation="new"
    )
    assert theirs.conversation
    with pytest.raises(NotFound):
        library.ask("and then?", user_id=bob.id, conversation=theirs.conversation)
    with pytest.raises(NotFound):
        library.ask("and then?", conversation="cv_nope")


def test_a_conversation_over_http(library: Shelf) -> None:
    from fastapi.testclient import TestClient

    from docshelf.api import create_app

    token = library.local_admin_token()  # the admin added the notes
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(library)) as client:
        first = client.post(
            "/v1/ask",
            json={"question": "How does a follower become a candidate?", "conversation": "new"},
            headers=headers,
        ).json()
        body = {"question": "and then what?", "conversation": first["conversation"]}
        follow = client.post("/v1/ask", json=body, headers=headers).json()
        assert follow["conversation"] == first["conversation"] and follow["citations"]
        with client.stream(
            "POST", "/v1/ask", json=body, headers={**headers, "Accept": "text/event-stream"}
        ) as streamed:
            done = [line for line in streamed.iter_lines() if line.startswith("data:")][-1]
        assert json.loads(done.removeprefix("data:"))["conversation"] == first["conversation"]
        gone = client.post("/v1/ask", json={**body, "conversation": "cv_nope"}, headers=headers)
        assert gone.status_code == 404


def test_a_lead_in_ending_in_a_colon_brings_its_list_or_code(shelf: Shelf, tmp_path: Path) -> None:
    from docshelf.plaintext import introduced

    note = (
        "# Tool\n\n## Removing it\n\nTo uninstall the widget tool and its cache, run the "
        "following command from your shell:\n\n```console\n$ widget self uninstall\n```\n\n"
        "## Words\n\nThese keywords are reserved by the widget language for future use:\n\n"
        "- `abstract`\n- `become`\n- **box**\n\nNothing else is reserved.\n"
    )
    assert introduced(note) == {
        "To uninstall the widget tool and its cache, run the following command from your "
        "shell:": "$ widget self uninstall",
        "These keywords are reserved by the widget language for future use:": (
            "abstract, become, box"
        ),
    }
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "tool.md").write_text(note)
    shelf.add(tmp_path / "notes")
    answer = shelf.ask("How do I uninstall the widget tool?")
    assert "shell: $ widget self uninstall [1]" in answer.answer
    reserved = shelf.ask("Which keywords are reserved for future use?")
    assert "future use: abstract, become, box [1]" in reserved.answer


def test_the_sentence_after_the_best_one_comes_with_it(shelf: Shelf, tmp_path: Path) -> None:
    """The sentence nearest a question often restates it; the answer is the next one."""
    (tmp_path / "logging.md").write_text(
        "# Logging\n\n"
        "If you do not configure logging yourself, the framework adds a stream handler. "
        "That handler writes to the server's error stream, usually standard error. "
        "Logging levels are described on another page of this manual for operators.\n"
    )
    shelf.add(tmp_path)
    answer = shelf.ask("If I do not configure logging myself, where does the handler go?")
    assert answer.answered and "adds a stream handler" in answer.answer
    assert "error stream" in answer.answer
    assert "Logging levels" not in answer.answer  # the best, the one after it: no more


def test_an_answer_reads_the_snippets_beside_its_hit_in_the_same_place(
    shelf: Shelf, tmp_path: Path
) -> None:
    """A section cut into two snippets keeps its answer in the second; the first is the
    hit. The sentences of the snippets beside a hit under the same heading are
    candidates, cited where they are; the part of one under another heading is not."""
    filler = " ".join(
        f"The list shows note number {n} of the vault with its folder and its last edit."
        for n in range(8)
    )
    (tmp_path / "plugins.md").write_text(
        "# Core plugins\n\n## Quick switcher\n\n"
        f"The quick switcher core plugin lets you jump to another file. {filler}\n\n"
        "Plugin ID: `switcher`\n\n"
        "## Outline\n\nThe outline core plugin has the plugin ID `outline`.\n"
    )
    shelf.add(tmp_path)
    question = "Which plugin ID does the quick switcher core plugin have?"
    cited = shelf.search(question, limit=1).hits[0]  # the section's second snippet
    assert cited.chunk.prev_id and "switcher`" in cited.chunk.text
    (first,) = shelf.runtime.store.get_chunks([cited.chunk.prev_id])
    hit = dataclasses.replace(cited, chunk=first)  # a hit on its first one
    assert "switcher`" not in hit.chunk.text and "The quick switcher core" in hit.chunk.text
    found = extract(shelf.retriever, question, gather_sources(shelf.retriever, [hit], 3000))
    assert "Plugin ID: switcher. [1]" in found.text, found.text
    assert "outline" not in found.text  # the snippet beside it, under the next heading
    assert [c.citation.heading_path[-1] for c in found.citations] == ["Quick switcher"]


def test_a_named_heading_is_answered_by_its_opening(shelf: Shelf, tmp_path: Path) -> None:
    """A question that is a note's title asks what the note is: its opening sentences,
    not the lines that repeat the title's words."""
    (tmp_path / "dead-links.md").write_text(
        "# Scanning the Hub for Dead Links\n\n"
        "This is a guide to checking the vault for links that no longer work. "
        "A link checker writes a report of every link it follows. "
        "A small script then keeps only the broken ones. "
        "Scanning for dead links in the hub takes a minute; dead links are scanned again "
        "after every release of the hub.\n"
    )
    (tmp_path / "other.md").write_text("# Releases\n\nA release of the hub is made monthly.\n")
    shelf.add(tmp_path)
    answer = shelf.ask("Scanning the Hub for Dead Links")
    assert answer.answer.startswith("This is a guide to checking the vault"), answer.answer
    assert "keeps only the broken ones" in answer.answer
    assert "takes a minute" not in answer.answer  # the opening, not the title's echo


def test_a_quoted_line_is_answered_with_the_lines_around_it(shelf: Shelf, tmp_path: Path) -> None:
    """A question that quotes a line word for word asks where it is from: the line, the
    one before it and the one after."""
    (tmp_path / "history.md").write_text(
        "# Early history\n\nThe lab had many visitors that year. "
        "During a meeting with the planner Don, Alan lost his patience. "
        "The best way to predict the future is to invent it. "
        "Don remained unconvinced, and the project went on without him. "
        "Later the group moved to another building.\n"
    )
    shelf.add(tmp_path)
    answer = shelf.ask("The best way to predict the future is to invent it")
    assert "Alan lost his patience. [1]" in answer.answer, answer.answer
    assert "Don remained unconvinced" in answer.answer
    assert "visitors" not in answer.answer and "another building" not in answer.answer


def test_a_sentence_is_cited_under_its_own_heading_in_a_packed_snippet(
    shelf: Shelf, tmp_path: Path
) -> None:
    """Short sections share one snippet; the hit is cited under one of them. A sentence
    of the answer from another is cited under its own heading (a number of its own), so
    every [n] opens where its sentence is."""
    (tmp_path / "prizes.md").write_text(
        "# October prizes\n\n## Winner\n\nThe winner of the plugin contest got a trophy.\n\n"
        "## Runners-up\n\nEach runner-up of the plugin contest received a credit of $200.\n"
    )
    shelf.add(tmp_path)
    hit = shelf.search("runner-up plugin contest credit", limit=1).hits[0]
    assert hit.chunk.inner  # one snippet, two sections
    answer = shelf.ask("What did the winner and each runner-up of the plugin contest receive?")
    by_n = {c.n: c.citation.heading_path[-1] for c in answer.citations}
    for sentence in answer.answer.split("] "):
        n = int(sentence.rsplit("[", 1)[1].rstrip("]"))
        assert ("Winner" if "trophy" in sentence else "Runners-up") == by_n[n], answer
    assert set(by_n.values()) == {"Winner", "Runners-up"}
