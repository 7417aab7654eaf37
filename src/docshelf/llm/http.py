"""What both LLM adapters share: an httpx client with timeouts, retries with
exponential backoff on 429/5xx and timeouts, a concurrency bound and a rate bound,
and one OpenTelemetry span per call (model, token counts; the span's own duration).

Streaming replies are Server-Sent Events, read with ``httpx-sse``. A stream is
retried like a plain call until its first event arrives; after that a failure
ends it (what was already delivered cannot be taken back).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from docshelf import telemetry
from docshelf.config import llm_limits
from docshelf.errors import Unavailable
from docshelf.telemetry import RateLimiter

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class Usage:
    """Token counts reported by the server, recorded on the call's span."""

    def __init__(self, current_span: Any, model: str) -> None:
        self.span = current_span
        self.model = model
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def record(self, prompt: int, completion: int, model: str | None = None) -> None:
        self.prompt_tokens, self.completion_tokens = prompt, completion
        self.model = model or self.model
        self.span.set_attribute("gen_ai.response.model", self.model)
        self.span.set_attribute("gen_ai.usage.input_tokens", prompt)
        self.span.set_attribute("gen_ai.usage.output_tokens", completion)


class JsonClient:
    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout: float = 60.0,
        attempts: int = 3,
        backoff: float = 0.5,
        concurrency: int | None = None,
        rate: float | None = None,
        system: str = "openai",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.system = system  # gen_ai.system on the spans: "openai" (the protocol) or "anthropic"
        self.attempts = attempts
        self.backoff = backoff
        env_concurrency, env_rate = llm_limits()  # unless given
        slots = concurrency or int(env_concurrency) or 4
        self._slots = threading.BoundedSemaphore(max(1, slots))
        self._rate = RateLimiter(rate if rate is not None else env_rate)
        self._client = httpx.Client(timeout=timeout, headers=headers)

    @contextmanager
    def _call(self, span: str, model: str, body: dict[str, Any]) -> Iterator[Usage]:
        attributes = telemetry.generation_attributes(
            self.system,
            model,
            max_tokens=body.get("max_tokens"),
            temperature=body.get("temperature"),
        )
        with self._slots, telemetry.span(span, **attributes) as current:
            yield Usage(current, model)

    def _retrying(self, attempt_once: Callable[[], Any]) -> Any:
        """Run ``attempt_once`` until it returns something other than a retry reason."""
        last = ""
        for attempt in range(1, self.attempts + 1):
            self._rate.wait()
            outcome = attempt_once()
            if not isinstance(outcome, _Retry):
                return outcome
            last = outcome.reason
            if attempt < self.attempts:
                time.sleep(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random()))
        raise Unavailable(f"The LLM at {self.base_url} did not answer: {last}")

    def _refused(self, response: httpx.Response) -> Unavailable:
        return Unavailable(
            f"The LLM at {self.base_url} refused the request "
            f"({response.status_code}): {response.text[:200]}"
        )

    def post(
        self,
        path: str,
        body: dict[str, Any],
        *,
        span: str,
        model: str,
        usage: Callable[[dict[str, Any]], tuple[int, int]],
    ) -> dict[str, Any]:
        """One JSON call; ``usage`` reads (prompt, completion) tokens off the reply."""
        url = f"{self.base_url}{path}"

        def once() -> dict[str, Any] | _Retry:
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException:
                return _Retry("timed out")
            except httpx.HTTPError as exc:
                return _Retry(f"{type(exc).__name__}: {exc}")
            if response.status_code >= 400:
                if response.status_code not in RETRY_STATUS:
                    raise self._refused(response)
                return _Retry(f"HTTP {response.status_code}")
            try:
                data = response.json()
            except ValueError:
                return _Retry("the reply was not JSON")
            return data if isinstance(data, dict) else _Retry("the reply was not a JSON object")

        with self._call(span, model, body) as counted:
            data: dict[str, Any] = self._retrying(once)
            counted.record(*usage(data), model=str(data.get("model") or model))
            if isinstance(data.get("id"), str):
                counted.span.set_attribute("gen_ai.response.id", data["id"])
            return data

    def stream(
        self, path: str, body: dict[str, Any], *, span: str, model: str, end_event: str = ""
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The server's events as ``(event name, JSON data)``. A ``[DONE]`` data line or
        an event named ``end_event`` ends it; a stream that stops short of either broke."""
        from httpx_sse import SSEError, connect_sse

        url = f"{self.base_url}{path}"
        with self._call(span, model, body) as counted:
            started = False
            cm: Any = None

            def once() -> Any:
                nonlocal cm
                try:
                    cm = connect_sse(self._client, "POST", url, json=body)
                    source = cm.__enter__()
                except httpx.TimeoutException:
                    return _Retry("timed out")
                except httpx.HTTPError as exc:
                    return _Retry(f"{type(exc).__name__}: {exc}")
                response = source.response
                if response.status_code >= 400:
                    response.read()
                    cm.__exit__(None, None, None)
                    if response.status_code not in RETRY_STATUS:
                        raise self._refused(response)
                    return _Retry(f"HTTP {response.status_code}")
                return source

            source = self._retrying(once)
            prompt = completion = 0
            ended = False
            try:
                for event in source.iter_sse():
                    if event.data.strip() == "[DONE]" or (end_event and event.event == end_event):
                        ended = True
                        break
                    try:
                        data = json.loads(event.data)
                    except ValueError:
                        raise Unavailable(
                            "The LLM's stream sent an event that is not JSON"
                        ) from None
                    if not isinstance(data, dict):
                        continue
                    started = True
                    # OpenAI sends usage in its last chunk; Anthropic in message_start
                    # (input) and message_delta (output).
                    for u in (data.get("usage"), (data.get("message") or {}).get("usage")):
                        if isinstance(u, dict):
                            prompt = max(prompt, int(u.get("prompt_tokens") or 0))
                            prompt = max(prompt, int(u.get("input_tokens") or 0))
                            completion = max(completion, int(u.get("completion_tokens") or 0))
                            completion = max(completion, int(u.get("output_tokens") or 0))
                    yield event.event, data
                if not ended:
                    raise Unavailable("The LLM's stream ended before the reply was complete")
            except (httpx.HTTPError, SSEError) as exc:
                where = "mid-stream" if started else "before its first event"
                raise Unavailable(f"The LLM's stream broke {where}: {exc}") from None
            finally:
                counted.record(prompt, completion)
                cm.__exit__(None, None, None)


class _Retry:
    def __init__(self, reason: str) -> None:
        self.reason = reason
