"""Anthropic's Messages API (``POST {url}/v1/messages``)."""

from __future__ import annotations

from collections.abc import Sequence

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
        self._http = JsonClient(url, headers, timeout=timeout, attempts=attempts, backoff=backoff)

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Completion:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, object] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": [
                {"role": m.role, "content": m.content} for m in messages if m.role != "system"
            ],
        }
        if system:
            body["system"] = system
        data = self._http.post("/v1/messages", body, span="llm.messages", model=self.model)
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
