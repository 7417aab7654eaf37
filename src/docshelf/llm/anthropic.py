"""Anthropic's Messages API (``POST {url}/v1/messages``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from docshelf.errors import Unavailable
from docshelf.llm import Completion, Message
from docshelf.llm.http import JsonClient

API_VERSION = "2023-06-01"


class AnthropicLLM:
    def __init__(
        self,
        url: str,
        model: str,
        api_key: str = "",
        *,
        timeout: float = 60.0,
        attempts: int = 3,
        backoff: float = 0.5,
    ) -> None:
        self.model = model
        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
        self._http = JsonClient(
            url, headers, timeout=timeout, attempts=attempts, backoff=backoff, system="anthropic"
        )

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Completion:
        body = self._body(messages, max_tokens, temperature)
        data = self._http.post(
            "/v1/messages", body, span="llm.messages", model=self.model, usage=_usage
        )
        try:
            text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
        except (KeyError, TypeError, AttributeError):
            raise Unavailable("The LLM's reply has no content blocks") from None
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            model=str(data.get("model") or self.model),
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
        )

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """The reply's text as it is generated (``content_block_delta`` events)."""
        body = {**self._body(messages, max_tokens, temperature), "stream": True}
        for event, data in self._http.stream(
            "/v1/messages", body, span="llm.messages", model=self.model, end_event="message_stop"
        ):
            if event == "error" or data.get("type") == "error":
                raise Unavailable(f"The LLM's stream reported an error: {data.get('error')}")
            delta = data.get("delta") or {}
            if data.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                yield str(delta.get("text") or "")

    def _body(
        self, messages: Sequence[Message], max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": [
                {"role": m.role, "content": m.content} for m in messages if m.role != "system"
            ],
        }
        if system:
            body["system"] = system
        return body


def _usage(data: dict[str, Any]) -> tuple[int, int]:
    usage = data.get("usage") or {}
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
