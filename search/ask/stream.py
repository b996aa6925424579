"""``POST /api/ask`` as server-sent events: sources first, the answer as the model writes it.

Asked for with ``Accept: text/event-stream`` (or ``"stream": true`` in the body). Events, in
this order:

``sources``  ``{"question", "snippets", "trace", "timings"}`` -- what retrieval found and the
             model is given (numbered as in the prompt), sent before the model writes a word;
``delta``    ``{"text"}`` -- the model's own text as it streams (its ``[n]`` markers are the
             snippets' prompt numbers, not yet checked); any number of them;
``done``     the JSON body of the non-streaming ask: verified and renumbered citations
             (``sources``), the rewritten ``answer``, ``warnings``, the stage ``trace`` (which
             stages ran) and ``timings`` (``first_token_ms`` among them);

or, instead of ``done``, ``error`` ``{"error": {"code", "message", "details"}}`` -- the one
error shape, ``details`` holding the retrieved ``sources``, ``trace`` and ``timings`` as a
502/503 does, plus ``partial_answer`` (what the model wrote before it failed, unverified).
A ``: keep-alive`` comment goes out every ``KEEPALIVE_SECS`` while the model is silent. A client
that disconnects ends the stream, which cancels the request to the model server (Django runs
under ``a2wsgi``, whose writes to a gone client are silent: ``reposearch.asgi`` watches for the
disconnect and sets the request's ``client_gone`` event, see ``search.ask.disconnects``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from search.ask.service import (
    AskFailed,
    AskRequest,
    PreparedAnswer,
    answer_timeout,
    ask_failure,
    finish_answer,
    prepare_answer,
)

logger = logging.getLogger(__name__)

KEEPALIVE_SECS = 15.0
POLL_SECS = 0.2  # how often the response thread looks for a client that went away
_END = object()


def event(name: str, data: Any) -> str:
    """One server-sent event (``data`` as JSON on one line)."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def failure_event(exc: AskFailed, partial: str = "") -> str:
    body = exc.result.as_dict()
    details: dict[str, Any] = {
        "sources": exc.result.retrieved,
        "trace": body["trace"],
        "timings": body["timings"],
    }
    if partial:
        details["partial_answer"] = partial
    return event("error", {"error": {"code": exc.code, "message": exc.message, "details": details}})


def sources_event(prepared: PreparedAnswer) -> str:
    body = prepared.result.as_dict()
    return event(
        "sources",
        {
            "question": body["question"],
            "snippets": body["snippets"],
            "trace": body["trace"],
            "timings": body["timings"],
        },
    )


class ModelPump(threading.Thread):
    """Runs the model's async stream on an event loop of its own and queues its pieces, so the
    (WSGI) response thread can wait with a timeout -- for keep-alives and to notice a client
    that left -- and ``stop()`` cancels the stream at once, even mid-read, closing the
    connection to the model server."""

    def __init__(self, chat: Any, prepared: PreparedAnswer, stats: Any) -> None:
        super().__init__(name="ask-stream", daemon=True)
        self.chat, self.prepared, self.stats = chat, prepared, stats
        self.queue: queue.Queue[Any] = queue.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = threading.Event()

    def run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()  # type: ignore[assignment]
        if self._stopped.is_set():
            return
        assert self.prepared.prompt is not None
        pieces = self.chat.astream(
            self.prepared.prompt.messages,
            max_tokens=self.prepared.max_tokens,
            timeout=answer_timeout(),
            stats=self.stats,
        )
        try:
            async for piece in pieces:
                self.queue.put(piece)
            self.queue.put(_END)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # handed to the response thread: an error event
            self.queue.put(exc)
        finally:
            await pieces.aclose()

    def stop(self) -> None:
        self._stopped.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop finished meanwhile
                loop.call_soon_threadsafe(task.cancel)


def answer_events(
    request: AskRequest, chat: Any = None, client_gone: threading.Event | None = None
) -> Iterator[str]:
    """The events of one streamed ask; never raises (a failure is an ``error`` event).

    ``client_gone`` (set by ``reposearch.asgi`` when the client disconnects) ends the stream and
    the model's request within ``POLL_SECS``."""
    from llm import ModelError, get_chat
    from llm.streaming import StreamStats

    try:
        chat = chat if chat is not None else get_chat()
        prepared = prepare_answer(request, chat)
    except Exception as exc:  # the database went away, a repository vanished meanwhile...
        logger.exception("streamed ask failed before the model was asked")
        yield event("error", _unexpected(exc))
        return
    yield sources_event(prepared)
    if prepared.prompt is None:
        yield event("done", prepared.result.as_dict())
        return
    stats = StreamStats()
    model_started = time.perf_counter()
    pump = ModelPump(chat, prepared, stats)
    pump.start()
    written: list[str] = []
    quiet_since = time.monotonic()
    try:
        while not (client_gone is not None and client_gone.is_set()):
            try:
                item = pump.queue.get(timeout=POLL_SECS)
            except queue.Empty:
                if time.monotonic() - quiet_since >= KEEPALIVE_SECS:
                    quiet_since = time.monotonic()
                    yield ": keep-alive\n\n"
                continue
            quiet_since = time.monotonic()
            if item is _END:
                break
            if isinstance(item, ModelError):
                yield failure_event(ask_failure(prepared, item, model_started), "".join(written))
                return
            if isinstance(item, Exception):
                logger.error("streamed ask failed while the model wrote", exc_info=item)
                yield event("error", _unexpected(item))
                return
            written.append(item)
            yield event("delta", {"text": item})
        else:
            logger.info("ask stream: the client went away; the model's request is cancelled")
            return
        try:
            result = finish_answer(prepared, "".join(written), stats, model_started)
        except AskFailed as exc:
            yield failure_event(exc)
            return
        yield event("done", result.as_dict())
    finally:  # done, failed, or the client went away: stop asking the model
        pump.stop()
        pump.join(5)


def _unexpected(exc: Exception) -> dict[str, Any]:
    from reposearch.api_errors import domain_error_response

    response = domain_error_response(exc)
    if response is not None and isinstance(response.data, dict) and "error" in response.data:
        return response.data
    return {
        "error": {
            "code": "internal_error",
            "message": "the answer failed on the server; see its log",
            "details": {},
        }
    }
