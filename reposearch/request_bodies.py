"""Request bodies received whole, on the event loop and with a deadline, before the app runs.

Django runs in a small pool of threads (``reposearch/asgi.py``), and under ``a2wsgi`` a view's
thread reads the body from the connection as it arrives: a client that sends the start of a
body and stops holds a thread for as long as it likes, and eight such clients took the site
down. ``BodyGate`` wraps the whole ASGI app so that a body arrives on the event loop, where a
waiting connection costs no thread:

- a body is received whole before the app is called, within ``REPO_SEARCH_BODY_TIMEOUT_SECS``
  of the request's headers; a slower one gets 408 and its connection is closed;
- one client address may have ``REPO_SEARCH_PENDING_BODIES_PER_ADDRESS`` bodies arriving at
  once; another gets 429 at once (the address is the client's behind a trusted proxy, as in
  ``accounts.identity.proxies``);
- a body declared larger than ``REPO_SEARCH_ANONYMOUS_BODY_BYTES`` is read only after its
  request's bearer token or session has been checked (webhook deliveries, which prove who sent
  them with a signature over the body, excepted); without one: 401;
- a body declared over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is not read here at all (the request
  guard answers 413 from its ``Content-Length``); a chunked one gets 413 here once it passes it.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.http import parse_cookie
from django.urls import reverse

from accounts.identity.proxies import client_address, is_trusted_address
from reposearch.api_errors import error_body

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

TITLES = {
    401: "Sign in first",
    408: "Request timeout",
    413: "Request too large",
    429: "Too many requests",
}


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    values = [value for key, value in scope.get("headers") or [] if key.lower() == name]
    return b", ".join(values).decode("latin-1") if values else None


def _declared_length(scope: dict[str, Any]) -> int | None:
    raw = _header(scope, b"content-length")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _has_body(scope: dict[str, Any]) -> bool:
    length = _declared_length(scope)
    chunked = "chunked" in (_header(scope, b"transfer-encoding") or "").lower()
    return bool(length) or (length is None and chunked)


def client_of(scope: dict[str, Any]) -> str:
    """The client's address: the TCP peer, or the client a trusted proxy names."""
    peer = str((scope.get("client") or ("",))[0] or "")
    forwarded = _header(scope, b"x-forwarded-for")
    if forwarded and is_trusted_address(peer):
        return client_address(forwarded, peer)
    return peer


def _webhook_prefix() -> str:
    return reverse("webhook-delivery", kwargs={"repository_id": "0"}).rsplit("/", 1)[0] + "/"


def _credentials_hold(authorization: str | None, session_key: str | None) -> bool:
    """``accounts.authentication.holds_credentials`` in a thread of its own, which then gives its
    database connection back (this is no request of Django's, whose end would close it)."""
    from django.db import connections

    from accounts.authentication import holds_credentials

    try:
        return holds_credentials(authorization, session_key)
    finally:
        connections.close_all()


async def _is_someone(scope: dict[str, Any]) -> bool:
    user_header = getattr(settings, "REPO_SEARCH_REMOTE_USER_HEADER", "")
    peer = str((scope.get("client") or ("",))[0] or "")
    vouched = user_header and _header(scope, user_header.lower().encode("latin-1"))
    if vouched and is_trusted_address(peer):
        return True  # the proxy vouches for the user (accounts.identity.remote_user)
    authorization = _header(scope, b"authorization")
    session_key = parse_cookie(_header(scope, b"cookie") or "").get(settings.SESSION_COOKIE_NAME)
    if authorization is None and not session_key:
        return False
    return await asyncio.to_thread(_credentials_hold, authorization, session_key)


async def refuse(
    scope: dict[str, Any],
    send: Any,
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
) -> None:
    """The one error shape under /api/ (a line of text elsewhere); the connection closes after."""
    if str(scope.get("path", "")).startswith("/api/"):
        body = json.dumps(error_body(code, message, details)).encode()
        content_type = b"application/json"
    else:
        body = f"{TITLES.get(status, 'Error')}: {message}\n".encode()
        content_type = b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        (b"x-content-type-options", b"nosniff"),
        (b"cache-control", b"no-store"),
    ]
    if status == 429:
        headers.append((b"retry-after", b"5"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyGate:
    """The ASGI app ``app`` with each HTTP request's body received first (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.pending: Counter[str] = Counter()  # bodies arriving now, by client address

    def waiting(self) -> int:
        """How many bodies are arriving now (all addresses)."""
        return sum(self.pending.values())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        declared = _declared_length(scope)
        if declared is not None and limit is not None and declared > limit:
            await self.app(scope, receive, send)  # refused by its Content-Length, unread
            return
        address = client_of(scope)
        if self.pending[address] >= settings.REPO_SEARCH_PENDING_BODIES_PER_ADDRESS:
            await refuse(
                scope,
                send,
                429,
                "too_many_bodies",
                "too many requests from this address are still sending their bodies",
                {"limit": settings.REPO_SEARCH_PENDING_BODIES_PER_ADDRESS},
            )
            return
        self.pending[address] += 1
        try:
            message = await self._receive_body(scope, receive, send, declared, limit)
        finally:
            self.pending[address] -= 1
            if self.pending[address] <= 0:
                del self.pending[address]
        if message is None:
            return  # refused, or the client left
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return message
            return await receive()  # after the body: http.disconnect, for streamed answers

        await self.app(scope, replay, send)

    async def _receive_body(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Any,
        declared: int | None,
        limit: int | None,
    ) -> dict[str, Any] | None:
        """The whole body as one ``http.request`` message, or None once answered or gone."""
        timeout = settings.REPO_SEARCH_BODY_TIMEOUT_SECS
        try:
            async with asyncio.timeout(timeout):
                large = settings.REPO_SEARCH_ANONYMOUS_BODY_BYTES
                signed = str(scope.get("path", "")).startswith(_webhook_prefix())
                small = declared is not None and declared <= large
                if not (small or signed or await _is_someone(scope)):
                    await refuse(
                        scope,
                        send,
                        401,
                        "not_authenticated",
                        f"a body over {large:,} bytes needs a valid API token or a "
                        "signed-in session",
                    )
                    return None
                chunks: list[bytes] = []
                size = 0
                while True:
                    message = await receive()
                    if message.get("type") == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if limit is not None and size > limit:
                        await refuse(
                            scope,
                            send,
                            413,
                            "body_too_large",
                            f"the request body is over the limit of {limit:,} bytes",
                            {"limit_bytes": limit},
                        )
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await refuse(
                scope,
                send,
                408,
                "body_timeout",
                f"the request body did not arrive within {timeout:g} seconds",
                {"timeout_secs": timeout},
            )
            return None
        return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
