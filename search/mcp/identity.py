"""Who an MCP tool call acts for: a ``Viewer`` in a context variable.

Over HTTP, ``search.mcp.http.authenticated`` sets it per request from the bearer token (the
SDK runs tools in threads that inherit the request's context); over stdio, ``manage.py mcp
--user NAME`` sets it once for the process. Tools read it with ``current_viewer()``; unset, it
is the fail-safe ``Viewer()`` (unrestricted repositories only).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from accounts.visibility import Viewer

_viewer: contextvars.ContextVar[Viewer | None] = contextvars.ContextVar("mcp_viewer", default=None)


def current_viewer() -> Viewer:
    return _viewer.get() or Viewer()


def act_as(viewer: Viewer) -> contextvars.Token[Viewer | None]:
    return _viewer.set(viewer)


@contextmanager
def acting_as(viewer: Viewer) -> Iterator[None]:
    token = act_as(viewer)
    try:
        yield
    finally:
        _viewer.reset(token)
