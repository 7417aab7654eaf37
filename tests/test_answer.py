"""Grounded answers: offline extractive, LLM with citation verification, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.errors import InvalidInput, Unavailable
from docshelf.knowledge.answer import cited_numbers, strip_broken
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
    assert strip_broken(
        "Raft elects leaders [1]. Paxos is older [7]. Logs replicate [2].", {1, 2}
    ) == ("Raft elects leaders [1]. Logs replicate [2].")


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
    assert set(c) == {"n", "chunk_id", "label"}
