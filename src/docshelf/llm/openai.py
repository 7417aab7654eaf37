"""OpenAI-compatible chat completions (``POST {url}/chat/completions``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from docshelf.errors import Unavailable
from docshelf.llm import Completion, Message
from docshelf.llm.http import JsonClient


class OpenAILLM:
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
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = JsonClient(url, headers, timeout=timeout, attempts=attempts, backoff=backoff)

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Completion:
        data = self._http.post(
            "/chat/completions",
            {
                "model": self.model,
                "messages": [{"role": m.role, "content": m.content} for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
            },
            span="llm.chat",
            model=self.model,
            usage=_usage,
        )
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise Unavailable("The LLM's reply has no choices[0].message.content") from None
        usage = data.get("usage") or {}
        return Completion(
            text=str(text),
            model=str(data.get("model") or self.model),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """The reply's text as it is generated (``stream: true``)."""
        body = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        for _, data in self._http.stream(
            "/chat/completions", body, span="llm.chat", model=self.model
        ):
            for choice in data.get("choices") or []:
                delta = (choice or {}).get("delta") or {}
                text = delta.get("content")
                if isinstance(text, str) and text:
                    yield text


def _usage(data: dict[str, Any]) -> tuple[int, int]:
    usage = data.get("usage") or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
