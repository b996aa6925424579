"""What ``/mcp`` answers around the MCP SDK: the site's security headers, and no open-ended
event stream.

- Every ``/mcp`` response, the SDK's and the token check's refusals alike, carries the headers
  every Django response carries (``reposearch.security_headers.HEADERS``).
- ``GET /mcp`` is 405 with ``Allow: POST``. The MCP server is stateless (``search.mcp.http``):
  it never pushes a message of its own, so the SDK's answer to a GET -- an event stream kept
  open with a ping every 15 s for as long as the client likes -- only held a connection and a
  task. The streamable HTTP transport lets a server without such a stream answer 405; clients
  then talk over POST alone, as they already do. ``DELETE`` (ending a session, which a
  stateless server does not keep) is refused the same way.
"""

from __future__ import annotations

import json
from typing import Any

from reposearch.security_headers import HEADERS

ALLOWED_METHODS = ("POST",)
_SECURITY_HEADERS = [(name.lower().encode(), value.encode()) for name, value in HEADERS.items()]


def _with_security_headers(send: Any) -> Any:
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name, value) for name, value in _SECURITY_HEADERS if name not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _method_not_allowed(method: str, send: Any) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "method_not_allowed",
                "message": f"{method} is not served at /mcp: this MCP server keeps no event"
                " stream and no session; send each request as a POST",
                "details": {"allowed": list(ALLOWED_METHODS)},
            }
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"allow", ", ".join(ALLOWED_METHODS).encode()),
    ]
    await send({"type": "http.response.start", "status": 405, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def mcp_edge(app: Any) -> Any:
    """``app`` (the authenticated MCP endpoint) with the security headers and only POST."""

    async def edge(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        send = _with_security_headers(send)
        method = str(scope.get("method", "")).upper()
        if method not in ALLOWED_METHODS:
            await _method_not_allowed(method, send)
            return
        await app(scope, receive, send)

    return edge
