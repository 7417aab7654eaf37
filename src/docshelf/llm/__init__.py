"""The ``LLM`` port: chat completions from an OpenAI-compatible server (hosted
APIs and local ones: Ollama, llama.cpp, vLLM) or Anthropic; ``None`` when
unconfigured — every feature then runs in its deterministic offline form.

Configured by ``DOCSHELF_LLM_URL`` (e.g. ``http://127.0.0.1:11434/v1`` or
``https://api.anthropic.com``), ``DOCSHELF_LLM_MODEL`` and a key from
``DOCSHELF_LLM_API_KEY`` (or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from docshelf.errors import InvalidInput


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int


class LLM(Protocol):
    model: str

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Completion:
        """One chat completion; raises ``Unavailable`` when the server cannot answer."""
        ...

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """The completion's text in pieces as the model writes it; ``Unavailable`` when
        the server cannot answer (before the first piece, after retries) or breaks off."""
        ...


def make_llm(
    url: str | None = None, model: str | None = None, api_key: str | None = None
) -> LLM | None:
    """The configured LLM, or None (offline forms)."""
    url = url if url is not None else os.environ.get("DOCSHELF_LLM_URL", "")
    if not url:
        return None
    model = model or os.environ.get("DOCSHELF_LLM_MODEL", "")
    if not model:
        raise InvalidInput("DOCSHELF_LLM_URL is set but DOCSHELF_LLM_MODEL is not; name a model")
    if "anthropic" in url:
        from docshelf.llm.anthropic import AnthropicLLM

        key = (
            api_key
            or os.environ.get("DOCSHELF_LLM_API_KEY")
            or os.environ.get("ANTHROPIC_API_KEY", "")
        )
        return AnthropicLLM(url, model, key)
    from docshelf.llm.openai import OpenAILLM

    key = api_key or os.environ.get("DOCSHELF_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", "")
    return OpenAILLM(url, model, key)


__all__ = ["LLM", "Completion", "Message", "make_llm"]
