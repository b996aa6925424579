"""Telling a streamed WSGI response that its client went away.

Django runs under ``a2wsgi`` in a thread pool; uvicorn drops writes to a disconnected client
silently, so a streaming view would go on (and keep a model busy) for nobody. ``watch`` wraps
the ASGI app: every HTTP request gets a ``threading.Event`` in its scope (``request.META
["asgi.scope"][CLIENT_GONE]``), and once a response starts as ``text/event-stream`` (the body
has been read by then) a task waits for ASGI's ``http.disconnect`` and sets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

CLIENT_GONE = "reposearch.client_gone"
ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def client_gone(meta: dict[str, Any]) -> threading.Event | None:
    """The request's disconnect event (None outside ``watch``: plain WSGI, the test client)."""
    scope = meta.get("asgi.scope")
    gone = scope.get(CLIENT_GONE) if isinstance(scope, dict) else None
    return gone if isinstance(gone, threading.Event) else None


def _is_event_stream(message: dict[str, Any]) -> bool:
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in message.get("headers") or []
    )


def watch(app: ASGIApp) -> ASGIApp:
    async def watched(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        gone = threading.Event()
        scope[CLIENT_GONE] = gone
        watcher: asyncio.Task[None] | None = None

        async def wait_for_disconnect() -> None:
            while (await receive()).get("type") != "http.disconnect":
                pass
            gone.set()

        async def watching_send(message: dict[str, Any]) -> None:
            nonlocal watcher
            if message.get("type") == "http.response.start" and _is_event_stream(message):
                watcher = asyncio.create_task(wait_for_disconnect())
            await send(message)

        try:
            await app(scope, receive, watching_send)
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    return watched
