"""A real HTTP model server for tests: Ollama and OpenAI wire protocols, scriptable failures.

Endpoints: Ollama ``POST /api/embed``, ``POST /api/chat``, ``GET /api/tags``; OpenAI
``POST /v1/embeddings``, ``POST /v1/chat/completions``, ``GET /v1/models``; the rerank
``POST /v1/rerank`` of llama.cpp and text-embeddings-inference (a document's relevance: the
share of the query's words it holds; ``server.rerank_answer`` replaces the answer).

Deterministic: an embedding is a hashed bag of words (so texts sharing words are close),
L2-normalised, of ``server.dim`` dimensions. Chat answers come from ``server.queue_chat(...)``
(strings or ``fn(messages) -> str``), else ``server.chat_handler``, else ``"ok"``.

Streaming (``"stream": true``): OpenAI server-sent events (``data: {chunk}`` ... ``data: [DONE]``)
or Ollama NDJSON, the reply cut into pieces of ``server.piece_chars`` characters sent
``server.drip`` seconds apart. A client that goes away mid-stream is noticed on the next write
and counted in ``server.abandoned_streams`` (``server.pieces_sent`` counts what got out).
``server.reject_json_schema = True`` answers ``response_format`` ``json_schema`` with a 500
naming the field, as llama-cpp-python's server does (``reject_status`` to change it);
``json_object`` with a ``schema`` is accepted.

Failure modes, for the next ``times`` requests (``path`` limits them to one endpoint):
``server.fail_next("500" | "429" | "garbage" | "slow" | "disconnect", times=1, ...)``;
mid-stream, after ``after`` pieces: ``"cut"`` (the connection closes, no final marker),
``"malformed"`` (a piece that is not JSON), ``"stall"`` (``delay`` seconds of silence, then the
rest), ``"stream_error"`` (an ``{"error": ...}`` piece, as Ollama and llama.cpp send);
``server.dim = 512`` for vectors of the wrong dimension; ``server.delay`` slows every answer;
``server.stop()`` leaves a closed port (connection refused). Every request is recorded in
``server.requests`` (method, path, headers, JSON body).

Fixture: ``model_server`` (function scope), defined here for the root conftest to import.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.model_wire import MID_STREAM, hashed_embedding, ok_response, stream_piece

ChatReply = str | Callable[[list[dict[str, Any]]], str]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def batch_size(self) -> int | None:
        """Number of texts in an embedding request."""
        if isinstance(self.body, dict) and isinstance(self.body.get("input"), list):
            return len(self.body["input"])
        return None


@dataclass
class Failure:
    kind: str
    times: int
    path: str | None = None
    delay: float = 0.0
    retry_after: str | None = "0"
    status: int = 500
    after: int = 0  # mid-stream failures: pieces sent before it happens


@dataclass
class ModelServer:
    dim: int = 384
    models: list[str] = field(default_factory=lambda: ["llama3.2:latest", "nomic-embed-text"])
    delay: float = 0.0
    chat_handler: Callable[[list[dict[str, Any]]], str] | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    piece_chars: int = 4
    drip: float = 0.0
    reject_json_schema: bool = False
    reject_status: int = 500
    abandoned_streams: int = 0
    pieces_sent: int = 0
    in_flight: int = 0  # requests being answered now, and the most there ever were at once
    max_in_flight: int = 0
    rerank_answer: Any = None  # what /v1/rerank answers instead of its word-overlap scores

    def __post_init__(self) -> None:
        self._replies: deque[ChatReply] = deque()
        self._failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[Any] = set()
        self.port = 0

    # -- control ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModelServer:
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"model_server": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down and close the port: later connections are refused."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        # Kept-alive connections would otherwise go on being served by their threads.
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def queue_chat(self, *replies: ChatReply) -> None:
        self._replies.extend(replies)

    def fail_next(self, kind: str, times: int = 1, **options: Any) -> None:
        kinds = ("500", "429", "garbage", "slow", "disconnect", "status")
        assert kind in (*kinds, "cut", "malformed", "stall", "stream_error"), kind
        self._failures.append(Failure(kind, times, **options))

    def clear_failures(self) -> None:
        self._failures.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    # -- behaviour ----------------------------------------------------------------------------

    def _take_failure(self, path: str) -> Failure | None:
        with self._lock:
            for failure in self._failures:
                if failure.path in (None, path) and failure.times > 0:
                    failure.times -= 1
                    if failure.times == 0:
                        self._failures.remove(failure)
                    return failure
        return None

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _chat_text(self, messages: list[dict[str, Any]]) -> str:
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            reply = self.chat_handler or "ok"
        return reply(messages) if callable(reply) else reply

    def respond(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
        if method == "GET" and path == "/api/tags":
            return ok_response({"models": [{"name": m, "model": m} for m in self.models]})
        if method == "GET" and path == "/v1/models":
            return ok_response(
                {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
            )
        if method != "POST" or not isinstance(body, dict):
            return 404, {}, b'{"error": "not found"}'
        if path == "/api/embed":
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            vectors = [hashed_embedding(str(t), self.dim) for t in texts or []]
            return ok_response({"model": body.get("model"), "embeddings": vectors})
        if path == "/v1/embeddings":
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            data = [
                {"object": "embedding", "index": i, "embedding": hashed_embedding(str(t), self.dim)}
                for i, t in enumerate(texts or [])
            ]
            return ok_response({"object": "list", "data": data, "model": body.get("model")})
        if path == "/v1/rerank":
            if self.rerank_answer is not None:
                return ok_response(self.rerank_answer)
            words = set(re.findall(r"\w+", str(body.get("query", "")).lower())) or {""}
            results = [
                {"index": i, "relevance_score": len(words & set(re.findall(r"\w+", d.lower())))
                 / len(words)}
                for i, d in enumerate(body.get("documents") or [])
            ]  # fmt: skip
            results.sort(key=lambda r: -r["relevance_score"])
            return ok_response({"model": body.get("model"), "results": results})
        if path == "/api/chat":
            text = self._chat_text(body.get("messages") or [])
            return ok_response(
                {
                    "model": body.get("model"),
                    "message": {"role": "assistant", "content": text},
                    "done": True,
                }
            )
        if path == "/v1/chat/completions":
            text = self._chat_text(body.get("messages") or [])
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            return ok_response(
                {"object": "chat.completion", "model": body.get("model"), "choices": [choice]}
            )
        return 404, {}, b'{"error": "not found"}'


class _Handler(BaseHTTPRequestHandler):
    model_server: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):  # a client that went away mid-request
            self.close_connection = True

    def setup(self) -> None:
        super().setup()
        with self.model_server._lock:
            self.model_server._connections.add(self.connection)

    def _handle(self, method: str) -> None:
        server = self.model_server
        with server._lock:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            self._answer(method)
        finally:
            with server._lock:
                server.in_flight -= 1

    def _answer(self, method: str) -> None:
        server = self.model_server
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        server.requests.append(RecordedRequest(method, path, headers, body))
        server._sleep(server.delay)
        failure = server._take_failure(path)
        if failure is not None:
            if failure.kind == "disconnect":
                self.close_connection = True
                self.connection.close()
                return
            if failure.kind == "slow":
                server._sleep(failure.delay)
            elif failure.kind == "garbage":
                self._send(200, {}, b'{"embeddings": [[0.1, 0.2,, oops')
                return
            elif failure.kind == "500":
                self._send(500, {}, b'{"error": "internal error"}')
                return
            elif failure.kind == "status":
                self._send(failure.status, {}, b'{"error": {"message": "scripted failure"}}')
                return
            elif failure.kind == "429":
                headers_out = {"Retry-After": failure.retry_after} if failure.retry_after else {}
                self._send(429, headers_out, b'{"error": "rate limited"}')
                return
        if (
            server.reject_json_schema
            and isinstance(body, dict)
            and (body.get("response_format") or {}).get("type") == "json_schema"
        ):
            message = b"1 validation error: ('body', 'response_format', 'type') 'json_schema'"
            self._send(server.reject_status, {}, b'{"error": {"message": "' + message + b'"}}')
            return
        wants_stream = isinstance(body, dict) and body.get("stream") is True
        if wants_stream and path in ("/api/chat", "/v1/chat/completions"):
            streamed = failure if failure and failure.kind in MID_STREAM else None
            self._stream(path, body, streamed)
            return
        status, extra, payload = server.respond(method, path, body)
        self._send(status, extra, payload)

    def _stream(self, path: str, body: dict[str, Any], failure: Failure | None) -> None:
        server = self.model_server
        text = server._chat_text(body.get("messages") or [])
        size = max(1, server.piece_chars)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        sse = path == "/v1/chat/completions"
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for index, piece in enumerate(pieces):
                if failure is not None and index == failure.after:
                    if failure.kind == "cut":
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if failure.kind == "malformed":
                        self._chunk(b"data: {not json\n\n" if sse else b"{not json\n")
                    elif failure.kind == "stream_error":
                        error = json.dumps({"error": {"message": "model crashed mid-answer"}})
                        self._chunk((f"data: {error}\n\n" if sse else error + "\n").encode())
                        self._chunk(b"")
                        return
                    elif failure.kind == "stall":
                        server._sleep(failure.delay)
                if index and server.drip:
                    server._sleep(server.drip)
                self._chunk(stream_piece(sse, body.get("model"), piece, done=False))
                server.pieces_sent += 1
            self._chunk(stream_piece(sse, body.get("model"), "", done=True))
            if sse:
                self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):  # the client went away
            self.close_connection = True
            with server._lock:
                server.abandoned_streams += 1

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A started ModelServer on 127.0.0.1 (random port), stopped after the test."""
    server = ModelServer().start()
    try:
        yield server
    finally:
        server.stop()


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` (for tests that wait on the server's background threads)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
