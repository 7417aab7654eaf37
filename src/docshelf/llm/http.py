"""What both LLM adapters share: an httpx client with timeouts, retries with
exponential backoff on 429/5xx and timeouts, a concurrency bound, and one
OpenTelemetry span per call (model and token counts)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import httpx

from docshelf import telemetry
from docshelf.errors import Unavailable

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class JsonClient:
    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout: float = 60.0,
        attempts: int = 3,
        backoff: float = 0.5,
        concurrency: int = 4,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.backoff = backoff
        self._slots = threading.BoundedSemaphore(concurrency)
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def post(self, path: str, body: dict[str, Any], *, span: str, model: str) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        last = ""
        with self._slots, telemetry.span(span, model=model):
            for attempt in range(1, self.attempts + 1):
                try:
                    response = self._client.post(url, json=body)
                except httpx.TimeoutException:
                    last = "timed out"
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                else:
                    if response.status_code < 400:
                        try:
                            data = response.json()
                        except ValueError:
                            last = "the reply was not JSON"
                        else:
                            if isinstance(data, dict):
                                return data
                            last = "the reply was not a JSON object"
                    elif response.status_code not in RETRY_STATUS:
                        raise Unavailable(
                            f"The LLM at {self.base_url} refused the request "
                            f"({response.status_code}): {response.text[:200]}"
                        )
                    else:
                        last = f"HTTP {response.status_code}"
                if attempt < self.attempts:
                    time.sleep(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random()))
        raise Unavailable(f"The LLM at {self.base_url} did not answer: {last}")
