"""Whose eyes the MCP tools use: a context variable set per session (stdio) or per request (HTTP).

``acting_as(viewer)`` sets it around the code that serves: ``manage.py mcp --user NAME`` wraps
the whole stdio server, the HTTP endpoint's authentication wraps each request (the SDK runs
the tools in a task and worker thread that copy the context, so the value reaches them). Unset,
the tools see unrestricted repositories only: a transport that forgets to say fails safe.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from accounts.visibility import Viewer, viewer_for

_CURRENT: ContextVar[Viewer] = ContextVar("reposearch_mcp_viewer", default=Viewer())  # noqa: B039


def current_viewer() -> Viewer:
    """The viewer of the session or request being served."""
    return _CURRENT.get()


@contextmanager
def acting_as(viewer: Viewer) -> Iterator[Viewer]:
    """Serve the MCP tools as ``viewer`` inside this block."""
    token = _CURRENT.set(viewer)
    try:
        yield viewer
    finally:
        _CURRENT.reset(token)


def viewer_of_user(user: Any) -> Viewer:
    """The MCP viewer of a Django user (the token's user over HTTP, ``--user`` over stdio)."""
    return viewer_for(user)
