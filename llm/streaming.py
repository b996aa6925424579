"""Streamed chat answers: OpenAI ``stream: true`` (server-sent events) and Ollama's NDJSON.

``stream_text`` (a generator, for threads) and ``astream_text`` (an async generator, for the
event loop) yield the answer's text as the model writes it. Deadlines: ``timeout`` bounds the
whole answer -- when it runs out after text has come, the answer ends there with
``finish_reason`` "time" (like the token limit's "length"); before any text, it is an error --
and ``idle_timeout`` bounds each wait for the next piece (a model that stops mid-answer fails
after it, not at the end of the whole budget). Failures raise the model
layer's errors: ``ModelUnavailable`` for a refused connection, a timeout, 429/5xx after the
retries, or a stream that ends before the model said it was done; ``ModelResponseError`` for a
4xx or a piece that is not the protocol's JSON. Only a request that has yielded nothing is
retried. Closing the generator (a client that went away) closes the upstream connection, so the
model server stops writing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from llm import http
from llm.errors import ModelError, ModelResponseError, ModelUnavailable


@dataclass
class StreamStats:
    """What a stream reported besides its text (filled in as it runs)."""

    pieces: int = 0
    chars: int = 0
    finish_reason: str | None = None
    done: bool = False
    first_piece_s: float | None = None  # seconds from the request to the first text
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamCall:
    """One streamed request: where to send it and how to read each line of the answer."""

    endpoint: http.Endpoint
    path: str
    payload: dict[str, Any]
    read_line: Callable[[StreamCall, str, StreamStats], str | None]


def _bad(call: StreamCall, what: str) -> ModelResponseError:
    return ModelResponseError(
        what, provider=call.endpoint.provider, base_url=call.endpoint.base_url
    )


def _unavailable(call: StreamCall, what: str) -> ModelUnavailable:
    return ModelUnavailable(what, provider=call.endpoint.provider, base_url=call.endpoint.base_url)


def _json_piece(call: StreamCall, text: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError:
        raise _bad(call, f"{call.path} streamed a piece that is not JSON: {text[:80]!r}") from None
    if isinstance(data, dict) and data.get("error"):
        err = data["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise _bad(call, f"{call.path} reported an error mid-answer: {str(message)[:200]}")
    return data


def openai_line(call: StreamCall, line: str, stats: StreamStats) -> str | None:
    """One line of an OpenAI server-sent event stream -> its text (None: no text in it)."""
    line = line.strip()
    if not line.startswith("data:"):  # blank separators, ": ping" comments, event:/id:
        return None
    data = line[5:].strip()
    if data == "[DONE]":
        stats.done = True
        return None
    chunk = _json_piece(call, data)
    try:
        choice = chunk["choices"][0] if chunk["choices"] else {}
    except (KeyError, TypeError):
        raise _bad(call, f"{call.path} streamed a chunk without choices") from None
    if not isinstance(choice, dict):
        raise _bad(call, f"{call.path} streamed a malformed choice")
    if choice.get("finish_reason"):
        stats.finish_reason = str(choice["finish_reason"])
        stats.done = True
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else None


def ollama_line(call: StreamCall, line: str, stats: StreamStats) -> str | None:
    """One line of Ollama's NDJSON stream -> its text."""
    if not line.strip():
        return None
    chunk = _json_piece(call, line)
    if not isinstance(chunk, dict):
        raise _bad(call, f"{call.path} streamed something other than an object")
    if chunk.get("done"):
        stats.done = True
        stats.finish_reason = str(chunk.get("done_reason") or "stop")
    message = chunk.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


def _headers(endpoint: http.Endpoint) -> dict[str, str]:
    headers = {"Accept": "text/event-stream, application/x-ndjson, application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    return headers


def _limits(endpoint: http.Endpoint, remaining: float, idle: float) -> httpx.Timeout:
    return httpx.Timeout(
        connect=min(endpoint.connect_timeout, remaining),
        read=min(idle, remaining),
        write=min(idle, remaining),
        pool=min(endpoint.connect_timeout, remaining),
    )


def _status_problem(call: StreamCall, response: httpx.Response) -> tuple[str, bool]:
    """(message, retryable) for an error status; raises at once for a non-retryable 4xx."""
    status = response.status_code
    text = http._excerpt(response, call.endpoint)
    if status != 429 and status < 500:
        hint = " (check LLM_API_KEY)" if status in (401, 403) else ""
        raise ModelResponseError(
            f"HTTP {status} from {call.path}{hint}: {text}",
            provider=call.endpoint.provider,
            base_url=call.endpoint.base_url,
            status=status,
        )
    return f"HTTP {status} from {call.path}: {text}", True


class _Attempts:
    """Retry bookkeeping shared by the sync and async loops (only before any text)."""

    def __init__(self, call: StreamCall, timeout: float) -> None:
        self.call = call
        self.total = timeout
        self.started = http.monotonic()
        self.deadline = self.started + timeout
        self.count = 0

    def remaining(self) -> float:
        left = self.deadline - http.monotonic()
        if left <= 0:
            raise _unavailable(self.call, f"no complete answer within {self.total:.3g}s")
        return left

    def out_of_time(self, stats: StreamStats) -> bool:
        """True when the whole answer's time is up after some text came: the answer ends
        there (``finish_reason`` "time"), as it would at the token limit. Raises when no text
        came at all."""
        if self.deadline - http.monotonic() > 0:
            return False
        if not stats.pieces:
            self.remaining()  # raises
        stats.finish_reason, stats.done = "time", True
        return True

    def next_wait(self, problem: str) -> float:
        """Seconds to wait before the next attempt, or raise when there is none."""
        self.count += 1
        if self.count > self.call.endpoint.max_retries:
            raise _unavailable(self.call, f"{problem} ({http.gave_up_after(self.count)})")
        wait = min(http.BACKOFF_MAX_SECS, http.BACKOFF_BASE_SECS * 2 ** (self.count - 1))
        if http.monotonic() + wait >= self.deadline:
            raise _unavailable(
                self.call,
                f"{problem}; a retry in {wait:g}s would pass the {self.total:.3g}s timeout",
            )
        return wait

    def idle_error(self, idle: float, stats: StreamStats) -> ModelUnavailable:
        if stats.pieces:
            return _unavailable(
                self.call,
                f"the model stopped writing for {idle:.3g}s (read timeout) after "
                f"{stats.chars} characters",
            )
        return _unavailable(self.call, f"no answer within {idle:.3g}s (read timeout)")

    def cut_error(self, stats: StreamStats) -> ModelUnavailable:
        return _unavailable(
            self.call,
            f"the stream ended before the model finished ({stats.chars} characters received)",
        )


def _take(call: StreamCall, line: str, stats: StreamStats, attempts: _Attempts) -> str | None:
    piece = call.read_line(call, line, stats)
    if piece:
        if stats.first_piece_s is None:
            stats.first_piece_s = http.monotonic() - attempts.started
        stats.pieces += 1
        stats.chars += len(piece)
    return piece or None


def stream_text(
    call: StreamCall, *, timeout: float, idle_timeout: float, stats: StreamStats | None = None
) -> Iterator[str]:
    """The answer's text pieces, from a thread (the process's pooled client)."""
    stats = stats if stats is not None else StreamStats()
    attempts = _Attempts(call, timeout)
    auth = call.endpoint.basic_auth()
    while True:
        remaining = attempts.remaining()
        try:
            with http.get_client().stream(
                "POST",
                call.endpoint.url(call.path),
                json=call.payload,
                headers=_headers(call.endpoint),
                timeout=_limits(call.endpoint, remaining, idle_timeout),
                auth=auth,
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    problem, _ = _status_problem(call, response)
                else:
                    for line in response.iter_lines():
                        piece = _take(call, line, stats, attempts)
                        if piece:
                            yield piece
                        if stats.done or attempts.out_of_time(stats):
                            return
                    raise attempts.cut_error(stats)
        except httpx.ReadTimeout:
            raise attempts.idle_error(idle_timeout, stats) from None
        except httpx.TimeoutException:
            problem = "connection timed out"
        except httpx.TransportError as exc:
            if stats.pieces:
                raise attempts.cut_error(stats) from None
            problem = f"connection failed ({type(exc).__name__})"
        http.sleep(attempts.next_wait(problem))


async def astream_text(
    call: StreamCall, *, timeout: float, idle_timeout: float, stats: StreamStats | None = None
) -> AsyncIterator[str]:
    """The answer's text pieces, on the event loop (a client of its own per stream)."""
    import asyncio

    stats = stats if stats is not None else StreamStats()
    attempts = _Attempts(call, timeout)
    auth = call.endpoint.basic_auth()
    async with httpx.AsyncClient(follow_redirects=False) as client:
        while True:
            remaining = attempts.remaining()
            try:
                async with client.stream(
                    "POST",
                    call.endpoint.url(call.path),
                    json=call.payload,
                    headers=_headers(call.endpoint),
                    timeout=_limits(call.endpoint, remaining, idle_timeout),
                    auth=auth,
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        problem, _ = _status_problem(call, response)
                    else:
                        async for line in response.aiter_lines():
                            piece = _take(call, line, stats, attempts)
                            if piece:
                                yield piece
                            if stats.done or attempts.out_of_time(stats):
                                return
                        raise attempts.cut_error(stats)
            except httpx.ReadTimeout:
                raise attempts.idle_error(idle_timeout, stats) from None
            except httpx.TimeoutException:
                problem = "connection timed out"
            except httpx.TransportError as exc:
                if stats.pieces:
                    raise attempts.cut_error(stats) from None
                problem = f"connection failed ({type(exc).__name__})"
            await asyncio.sleep(attempts.next_wait(problem))


__all__ = [
    "ModelError",
    "StreamCall",
    "StreamStats",
    "astream_text",
    "ollama_line",
    "openai_line",
    "stream_text",
]
