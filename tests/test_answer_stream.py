"""Streamed answers: the LLM port's streaming (OpenAI protocol on a fake loopback server,
Anthropic's event shapes through httpx's mock transport), sentence-by-sentence
citation checks, fallbacks, and ``POST /v1/ask`` as Server-Sent Events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from docshelf.api import create_app
from docshelf.errors import Unavailable
from docshelf.knowledge.answer import AnswerPiece, cited_numbers, sentences_as_they_come
from docshelf.llm import Message
from docshelf.llm.anthropic import AnthropicLLM
from docshelf.llm.openai import OpenAILLM
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server
from tests.live_server import serve


@pytest.fixture
def library(shelf: Shelf, notes: Path) -> Shelf:
    shelf.add(notes)
    return shelf


def _llm(url: str) -> OpenAILLM:
    return OpenAILLM(url, "fake-model", backoff=0.01, attempts=3, timeout=2.0)


def _pieces(shelf: Shelf, question: str) -> list[AnswerPiece]:
    return list(shelf.ask_stream(question))


# -- pure ---------------------------------------------------------------------------------------
def test_sentences_come_out_whole() -> None:
    pieces = ["Raft elects ", "a leader [1]. The lea", "der replicates [2]. Done"]
    assert list(sentences_as_they_come(pieces)) == [
        "Raft elects a leader [1].",
        "The leader replicates [2].",
        "Done",
    ]


@given(
    st.lists(st.sampled_from(["Ab cd. ", "Ef [1]. ", "gh", " ", "Ij! ", "k"]), max_size=12),
    st.data(),
)
def test_any_chunking_gives_the_same_sentences(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert list(sentences_as_they_come(pieces)) == list(sentences_as_they_come([text]))
    assert " ".join(sentences_as_they_come(pieces)).split() == text.split()


# -- the port ------------------------------------------------------------------------------------
def test_openai_stream_with_retry_before_the_first_event() -> None:
    script = Script(("status", 429), ("stream", ["Hel", "lo", " there."]))
    with fake_llm_server(script) as url:
        text = "".join(_llm(url).stream([Message("user", "hi")]))
    assert text == "Hello there."
    assert script.requests[1]["stream"] is True


def test_a_stream_cut_short_is_an_error() -> None:
    script = Script(("stream-cut", ["Hel", "lo"]))
    with fake_llm_server(script) as url:
        got: list[str] = []
        with pytest.raises(Unavailable):
            for piece in _llm(url).stream([Message("user", "hi")]):
                got.append(piece)
    assert got == ["Hel", "lo"]


def test_anthropic_stream_events() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 12}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}},
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": " you."}},
        ),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    body = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events)
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)

    llm = AnthropicLLM("https://llm.invalid", "claude-test", "key")
    llm._http._client = httpx.Client(transport=httpx.MockTransport(handler))
    assert "".join(llm.stream([Message("system", "Be brief."), Message("user", "hi")])) == "Hi you."
    assert seen[0]["stream"] is True and seen[0]["system"] == "Be brief."
    # An error event mid-stream is an error, and so is a stream that never stops.
    broken = body.replace('event: message_stop\ndata: {"type": "message_stop"}\n\n', "")
    llm._http._client = httpx.Client(
        transport=httpx.MockTransport(
            lambda r: httpx.Response(
                200, headers={"content-type": "text/event-stream"}, text=broken
            )
        )
    )
    with pytest.raises(Unavailable):
        list(llm.stream([Message("user", "hi")]))


# -- answers --------------------------------------------------------------------------------------
def test_a_streamed_sentence_citing_nothing_retrieved_never_reaches_the_user(
    library: Shelf,
) -> None:
    reply = [
        "A follower that hears no heartbeat becomes a candidate [1]. ",
        "Raft was invented on the moon [7]. ",
        "Raft was designed by astronauts in 1969 [1]. ",  # cites a source that never says it
        "This answer needs no source. ",
        "The leader replicates entries [1].",
    ]
    script = Script(("stream", reply))
    with fake_llm_server(script) as url:
        library.llm = _llm(url)
        pieces = _pieces(library, "what does a follower do without a heartbeat?")
    kinds = [p.kind for p in pieces]
    assert kinds[0] == "sources" and kinds[-1] == "done" and set(kinds[1:-1]) == {"text"}
    streamed = "".join(p.text for p in pieces if p.kind == "text")
    assert "[7]" not in streamed and "moon" not in streamed
    assert "astronauts" not in streamed and "no source" not in streamed
    assert streamed.count("[1]") == 2
    answer = pieces[-1].answer
    assert answer is not None and answer.mode == "llm" and answer.answer == streamed
    assert answer.notice and "3 sentence(s) their sources do not support" in answer.notice
    valid = {c.n for c in pieces[0].sources}
    assert set(cited_numbers(answer.answer)) <= valid
    assert {c.n for c in answer.citations} == set(cited_numbers(answer.answer))


def test_stream_falls_back_to_extractive_when_the_llm_is_down(library: Shelf) -> None:
    script = Script(("status", 503), ("status", 503), ("status", 503))
    with fake_llm_server(script) as url:
        library.llm = _llm(url)
        pieces = _pieces(library, "what does a follower do without a heartbeat?")
    answer = pieces[-1].answer
    assert answer is not None and answer.mode == "extractive"
    assert answer.notice and "LLM failed" in answer.notice
    assert pieces[-2].kind == "text"
    assert "".join(p.text for p in pieces if p.kind == "text") == answer.answer


def test_stream_cut_mid_answer_keeps_what_was_verified(library: Shelf) -> None:
    script = Script(("stream-cut", ["A follower becomes a candidate [1]. ", "It then"]))
    with fake_llm_server(script) as url:
        library.llm = _llm(url)
        pieces = _pieces(library, "what does a follower do without a heartbeat?")
    answer = pieces[-1].answer
    assert answer is not None and answer.mode == "llm"
    assert answer.answer == "A follower becomes a candidate [1]."
    assert answer.notice and "stopped mid-answer" in answer.notice


def test_api_streams_the_answer(library: Shelf) -> None:
    token = library.local_admin_token()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"question": "what does a follower do without a heartbeat?"}
    with TestClient(create_app(library)) as client:
        plain = client.post("/v1/ask", json=body, headers=headers)
        assert plain.status_code == 200 and plain.json()["mode"] == "extractive"
        script = Script(("stream", ["A follower becomes ", "a candidate [1]."]))
        with fake_llm_server(script) as url:
            library.llm = _llm(url)
            r = client.post(
                "/v1/ask", json=body, headers={**headers, "Accept": "text/event-stream"}
            )
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = []
        for block in r.text.replace("\r\n", "\n").split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
            if "event" in lines:
                events.append((lines["event"], json.loads(lines["data"])))
        assert [e for e, _ in events] == ["sources", "text", "done"]
        assert events[0][1]["sources"][0]["n"] == 1
        assert events[1][1] == {"text": "A follower becomes a candidate [1]."}
        done = events[2][1]
        assert done["mode"] == "llm" and [c["n"] for c in done["citations"]] == [1]
        assert set(done) >= {"answer", "mode", "citations"}
        bad = client.post(
            "/v1/ask", json={"question": "  "}, headers={**headers, "Accept": "text/event-stream"}
        )
        assert bad.status_code == 400


def test_offline_sse_sends_one_text_event_per_sentence(shelf: Shelf, tmp_path: Path) -> None:
    """Read as a client reads it: the stream over a real socket, event by event."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "raft.md").write_text(
        "# Raft\n\n## Election\n\n"
        "- A follower waits for a heartbeat from the leader.\n"
        "- A follower without a heartbeat becomes a candidate.\n"
    )
    (root / "zab.md").write_text("# Zab\n\nIn Zab a follower that misses a heartbeat votes.\n")
    shelf.add(root)
    headers = {"Authorization": f"Bearer {shelf.local_admin_token()}"}
    body = {"question": "What does a follower do without a heartbeat?"}
    events: list[tuple[str, dict[str, Any]]] = []
    with (
        serve(create_app(shelf)) as url,
        httpx.stream(
            "POST",
            f"{url}/v1/ask",
            json=body,
            headers={**headers, "Accept": "text/event-stream"},
            timeout=30,
        ) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ").strip()
            elif line.startswith("data: ") and kind:
                events.append((kind, json.loads(line.removeprefix("data: "))))
    kinds = [k for k, _ in events]
    assert kinds[0] == "sources" and kinds[-1] == "done"
    texts = [data["text"] for k, data in events if k == "text"]
    assert len(texts) == 3 == kinds.count("text")  # three sentences, three events
    for text in texts:
        assert len(cited_numbers(text)) == 1 and text.strip().endswith("]")
    done = events[-1][1]
    assert "".join(texts) == done["answer"] and done["mode"] == "extractive"
    assert [s["n"] for s in events[0][1]["sources"]] == [c["n"] for c in done["citations"]]
    assert [c["n"] for c in done["citations"]] == [1, 2]
