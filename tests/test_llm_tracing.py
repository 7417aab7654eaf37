"""LLM calls as generation spans: OpenTelemetry's GenAI attributes (what Langfuse's
OTLP endpoint reads) and docshelf's correlation fields on every call, checked with
OpenTelemetry's in-memory span exporter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from docshelf import telemetry
from docshelf.knowledge.answer import ANSWER_TOKENS
from docshelf.llm import Message
from docshelf.llm.anthropic import AnthropicLLM
from docshelf.llm.openai import OpenAILLM
from docshelf.rerank.llm_judge import LLMJudge
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server

# On every generation span, whatever made the call; a call that got an answer also has
# the RESPONSE side (a failed one has the error instead).
REQUEST = {
    "gen_ai.operation.name",
    "gen_ai.system",
    "gen_ai.request.model",
    "langfuse.observation.type",
    "langfuse.environment",
    "docshelf.component",
    "docshelf.action",
    "docshelf.run_id",
    "docshelf.event_id",
}
RESPONSE = {"gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}
REQUIRED = REQUEST | RESPONSE


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(telemetry, "_tracer", provider.get_tracer("docshelf"))
    monkeypatch.setenv("DOCSHELF_ENVIRONMENT", "staging")
    return exporter


def generations(exporter: InMemorySpanExporter) -> list[dict[str, object]]:
    spans: Sequence[ReadableSpan] = exporter.get_finished_spans()
    found: list[dict[str, object]] = []
    for span in (s for s in spans if s.name.startswith("llm.")):
        attributes: dict[str, object] = dict(span.attributes or {})
        failed = span.status.status_code is StatusCode.ERROR
        assert (REQUEST if failed else REQUIRED) <= set(attributes), REQUIRED - set(attributes)
        found.append(attributes)
        assert attributes["langfuse.observation.type"] == "generation"
        assert attributes["langfuse.environment"] == "staging"
        assert attributes["deployment.environment"] == "staging"
        assert attributes["gen_ai.operation.name"] == "chat"
    return found


@pytest.fixture
def library(shelf: Shelf, notes: Path) -> Shelf:
    shelf.add(notes)
    return shelf


def test_an_answer_and_its_retry_are_one_run(
    library: Shelf, exporter: InMemorySpanExporter
) -> None:
    script = Script(("ok", "Raft was invented in 2014 [7]."), ("ok", "Candidates ask [1]."))
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        assert library.ask("leader election", limit=3).mode == "llm"
    first, second = generations(exporter)
    for span in (first, second):
        assert span["gen_ai.system"] == "openai" and span["gen_ai.provider.name"] == "openai"
        assert span["gen_ai.request.model"] == span["gen_ai.response.model"] == "fake-model"
        assert (span["gen_ai.usage.input_tokens"], span["gen_ai.usage.output_tokens"]) == (100, 20)
        assert span["gen_ai.request.max_tokens"] == ANSWER_TOKENS
        assert span["gen_ai.request.temperature"] == 0.0
        assert (span["docshelf.component"], span["docshelf.action"]) == ("answer", "ask")
    assert first["docshelf.run_id"] == second["docshelf.run_id"]  # the retry: the same run
    assert first["docshelf.event_id"] != second["docshelf.event_id"]  # each call: its own
    exporter.clear()
    with fake_llm_server(Script(("ok", "Candidates ask [1]."))) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        library.ask("leader election", limit=3)
    [third] = generations(exporter)
    assert third["docshelf.run_id"] != first["docshelf.run_id"]  # another answer


def test_a_streamed_answer_is_a_generation_with_its_tokens(
    library: Shelf, exporter: InMemorySpanExporter
) -> None:
    script = Script(("stream", ["Candidates ", "ask for votes [1]."]))
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        pieces = list(library.ask_stream("leader election", limit=3))
    assert pieces[-1].answer is not None and pieces[-1].answer.mode == "llm"
    [span] = generations(exporter)
    assert (span["docshelf.component"], span["docshelf.action"]) == ("answer", "ask.stream")
    assert (span["gen_ai.usage.input_tokens"], span["gen_ai.usage.output_tokens"]) == (100, 2)


def test_anthropic_calls_name_their_system(exporter: InMemorySpanExporter) -> None:
    reply = {
        "id": "msg_1",
        "model": "claude-test-1",
        "content": [{"type": "text", "text": "hello"}],
        "usage": {"input_tokens": 7, "output_tokens": 2},
    }
    llm = AnthropicLLM("https://llm.invalid", "claude-test", "key")
    llm._http._client = httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(200, text=json.dumps(reply)))
    )
    with telemetry.llm_call("answer", "ask", run_id="run-42"):
        assert llm.complete([Message("user", "hi")], max_tokens=64).text == "hello"
    [span] = generations(exporter)
    assert span["gen_ai.system"] == "anthropic"
    assert (span["gen_ai.request.model"], span["gen_ai.response.model"]) == (
        "claude-test",
        "claude-test-1",
    )
    assert span["gen_ai.response.id"] == "msg_1"
    assert (span["gen_ai.usage.input_tokens"], span["gen_ai.usage.output_tokens"]) == (7, 2)
    assert span["gen_ai.request.max_tokens"] == 64
    assert span["docshelf.run_id"] == "run-42"


def test_enrichment_calls_carry_the_document(
    library: Shelf, exporter: InMemorySpanExporter
) -> None:
    doc = library.store.list_documents()[0]
    script = Script(("ok", "not json"), ("ok", "still not json"))  # falls back offline
    with fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        library.enrich([doc.id])
    first, second = generations(exporter)
    for span in (first, second):
        assert (span["docshelf.component"], span["docshelf.action"]) == ("enrich", "enrich")
        assert span["docshelf.document_id"] == doc.id
        assert span["gen_ai.request.max_tokens"] == 900
    assert first["docshelf.run_id"] == second["docshelf.run_id"]


def test_rerank_judge_calls(library: Shelf, exporter: InMemorySpanExporter) -> None:
    script = Script(("ok", "no scores here"), ("status", 400))  # a retry, then a refusal
    with fake_llm_server(script) as url:
        library.reranker = LLMJudge(OpenAILLM(url, "judge", backoff=0.01))
        assert library.search("leader", mode="lexical").hits  # the fused order stands
    answered, refused = generations(exporter)
    for span in (answered, refused):
        assert (span["docshelf.component"], span["docshelf.action"]) == ("rerank", "judge")
    assert answered["docshelf.run_id"] == refused["docshelf.run_id"]
    assert set(answered) >= RESPONSE and not RESPONSE & set(refused)


def test_a_call_outside_any_operation_is_still_a_complete_generation(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCSHELF_ENVIRONMENT")
    script = Script(("ok", "hi"))
    with fake_llm_server(script) as url:
        OpenAILLM(url, "fake-model").complete([Message("user", "hi")])
    [span] = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    assert set(span) >= REQUIRED
    assert span["docshelf.component"] == "unknown" and span["langfuse.environment"] == "default"


def test_the_correlation_block_restores_what_was_there() -> None:
    with telemetry.llm_call("answer", "ask") as outer:
        with telemetry.llm_call("rerank", "judge"):
            pass
        inner_after = telemetry.generation_attributes("openai", "m")
    assert inner_after["docshelf.run_id"] == outer.run_id
    assert telemetry.generation_attributes("openai", "m")["docshelf.component"] == "unknown"


def test_an_answer_streamed_over_the_api_keeps_its_correlation(
    library: Shelf, exporter: InMemorySpanExporter
) -> None:
    """The SSE response runs the answer's generator step by step in a thread pool,
    each step in a copy of the request's context: the fields must survive that."""
    from fastapi.testclient import TestClient

    from docshelf.api import create_app

    headers = {"Authorization": f"Bearer {library.local_admin_token()}"}
    body = {"question": "what does a follower do without a heartbeat?"}
    script = Script(("stream", ["A follower becomes ", "a candidate [1]."]))
    with TestClient(create_app(library)) as client, fake_llm_server(script) as url:
        library.llm = OpenAILLM(url, "fake-model", backoff=0.01)
        reply = client.post(
            "/v1/ask", json=body, headers={**headers, "Accept": "text/event-stream"}
        )
        assert reply.status_code == 200 and "a candidate [1]." in reply.text
        assert client.post("/v1/ask", json=body, headers=headers).status_code == 200  # unstreamed
    streamed, unstreamed = generations(exporter)
    assert (streamed["docshelf.component"], streamed["docshelf.action"]) == ("answer", "ask.stream")
    assert (unstreamed["docshelf.component"], unstreamed["docshelf.action"]) == ("answer", "ask")
    assert streamed["gen_ai.usage.output_tokens"] == 2
