"""Streamable HTTP transport of the MCP server, as an ASGI app mounted at ``/mcp``.

Stateless with JSON responses: every request carries what it needs, so any web worker
process can answer any request and nothing has to be shared between them. Host and Origin
headers are checked against Django's ``ALLOWED_HOSTS`` (DNS-rebinding protection; ``*``
switches the check off, as it does for Django; a ``.example.com`` entry allows that domain).
"""

from __future__ import annotations

from typing import Any

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
