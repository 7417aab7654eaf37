"""The ``LLM`` port: chat completions from an OpenAI-compatible server (hosted
APIs and local ones: Ollama, llama.cpp, vLLM) or Anthropic; ``None`` when
unconfigured — every feature then runs in its deterministic offline form.

Configured by ``DOCSHELF_LLM_URL`` (e.g. ``http://127.0.0.1:11434/v1`` or
``https://api.anthropic.com``), ``DOCSHELF_LLM_MODEL`` and a key from
``DOCSHELF_LLM_API_KEY`` (or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from docshelf.errors import InvalidInput

if TYPE_CHECKING:
    from docshelf.config import LLMSettings


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


def make_llm(settings: LLMSettings) -> LLM | None:
    """The configured LLM (``Settings.llm``), or None (offline forms)."""
    if not settings.url:
        return None
    if not settings.model:
        raise InvalidInput("DOCSHELF_LLM_URL is set but DOCSHELF_LLM_MODEL is not; name a model")
    if "anthropic" in settings.url:
        from docshelf.llm.anthropic import AnthropicLLM

        return AnthropicLLM(settings.url, settings.model, settings.key_for("anthropic"))
    from docshelf.llm.openai import OpenAILLM

    return OpenAILLM(settings.url, settings.model, settings.key_for("openai"))


__all__ = ["LLM", "Completion", "Message", "make_llm"]
