"""A fake OpenAI-protocol server on loopback with scripted replies."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Script:
    """Replies in order; each is ("ok", text), ("status", code), ("raw", body), ("sleep", s),
    ("stream", [pieces]) — an OpenAI-style event stream — or ("stream-cut", [pieces]),
    a stream that breaks off after its pieces without ending."""

    def __init__(self, *replies: tuple[str, Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def next(self) -> tuple[str, Any]:
        with self.lock:
            return self.replies.pop(0) if self.replies else ("status", 500)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            script.requests.append(body)
            kind, value = script.next()
            if kind == "sleep":
                time.sleep(value)
                kind, value = "ok", "late"
            if kind in ("stream", "stream-cut"):
                self._stream(value, body, cut=kind == "stream-cut")
                return
            if kind == "status":
                self.send_response(value)
                self.end_headers()
                self.wfile.write(b'{"error": "scripted"}')
                return
            payload = (
                value.encode()
                if kind == "raw"
                else json.dumps(
                    {
                        "model": body.get("model", "fake"),
                        "choices": [{"message": {"role": "assistant", "content": value}}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
                    }
                ).encode()
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, pieces: list[str], body: dict[str, Any], *, cut: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            model = body.get("model", "fake")
            for piece in pieces:
                chunk = {"model": model, "choices": [{"delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if cut:
                self.wfile.write(b'data: {"choi')  # an event that never ends
                self.wfile.flush()
                self.close_connection = True
                return
            usage = {"prompt_tokens": 100, "completion_tokens": len(pieces)}
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out and hung up is expected here; say nothing."""


@contextmanager
def fake_llm_server(script: Script) -> Iterator[str]:
    server = _QuietServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
