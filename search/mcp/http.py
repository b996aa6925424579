"""Streamable HTTP transport of the MCP server, as an ASGI app mounted at ``/mcp``.

Stateless with JSON responses: every request carries what it needs, so any web worker
process can answer any request and nothing has to be shared between them. Host and Origin
headers are checked against Django's ``ALLOWED_HOSTS`` (DNS-rebinding protection; ``*``
switches the check off, as it does for Django; a ``.example.com`` entry allows that domain).

Every request needs ``Authorization: Bearer <token>`` of an account with the ``read`` role
(``REPO_SEARCH_ANONYMOUS_READ=1`` lets anonymous requests read unrestricted repositories); the
tools then see what that account sees (``search.mcp.identity``). Refusals are 401 (with
``WWW-Authenticate: Bearer``) or 403 in the API's error shape.
"""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings

MCP_PATH = "/mcp"


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """The SDK's Host/Origin checks for the hosts Django answers to."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for entry in allowed_hosts:
        host = entry.lstrip(".")
        if not host:
            continue
        hosts += [host, f"{host}:*"]
        origins += [
            f"{scheme}://{host}{port}" for scheme in ("http", "https") for port in ("", ":*")
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_http_app() -> Any:
    """A Starlette app serving the MCP endpoint at ``/mcp`` (its lifespan runs the sessions)."""
    from search.mcp.server import build_server

    return build_server().streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(list(settings.ALLOWED_HOSTS)),
    )


def _refusal(status: int, code: str, message: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="reposearch"'))
    return status, headers, body


def _identify(headers: list[tuple[bytes, bytes]], address: str | None = None) -> Any:
    """The (viewer, caller) for a request's headers, or a refusal (status, headers, body)."""
    from rest_framework.exceptions import AuthenticationFailed

    from accounts.authentication import token_from_header
    from accounts.tokens import effective_role
    from accounts.visibility import Viewer, viewer_for
    from search.mcp.identity import Caller

    values = [value for name, value in headers if name.lower() == b"authorization"]
    try:
        if not values:
            if settings.REPO_SEARCH_ANONYMOUS_READ:
                return Viewer(), Caller(address=address)
            return _refusal(
                401, "not_authenticated", "send an API token: Authorization: Bearer <token>"
            )
        if len(values) > 1:
            return _refusal(401, "authentication_failed", "send one Authorization header")
        try:
            header = values[0].decode("ascii")
        except UnicodeDecodeError:
            return _refusal(401, "authentication_failed", "that is not an API token")
        try:
            token = token_from_header(header)
        except AuthenticationFailed as error:
            return _refusal(401, "authentication_failed", str(error.detail))
        role = effective_role(token)
        if role is None:
            return _refusal(403, "permission_denied", "this account cannot read")
        return viewer_for(token.user), Caller(role, token.user, token, address)
    finally:
        from django.db import connection

        connection.close()


def authenticated(app: Any) -> Any:
    """ASGI wrapper: refuse requests without a usable token; tools act as the token's user."""
    from search.mcp.identity import act_as

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else None
        outcome = await sync_to_async(_identify, thread_sensitive=False)(
            scope.get("headers", []), address
        )
        if len(outcome) == 3:
            status, headers, body = outcome
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        act_as(*outcome)
        await app(scope, receive, send)

    return guarded
