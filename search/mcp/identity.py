"""Who an MCP tool call acts for: a ``Viewer`` and a role in context variables.

Over HTTP, ``search.mcp.http.authenticated`` sets them per request from the bearer token (the
SDK runs tools in threads that inherit the request's context); over stdio, ``manage.py mcp
--user NAME`` sets them once for the process. Tools read them with ``current_viewer()`` and
``current_caller()``; unset, the viewer is the fail-safe ``Viewer()`` (unrestricted
repositories only) and the caller has no role (it may not write).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from accounts.roles import Role
from accounts.visibility import Viewer


@dataclass(frozen=True)
class Caller:
    """The account behind the calls: its role (the token's scope capped by the user's role),
    and the user, token and address the audit log names."""

    role: Role | None = None
    user: Any = None
    token: Any = None
    address: str | None = None


_viewer: contextvars.ContextVar[Viewer | None] = contextvars.ContextVar("mcp_viewer", default=None)
_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("mcp_caller", default=None)


def current_viewer() -> Viewer:
    return _viewer.get() or Viewer()


def current_caller() -> Caller:
    return _caller.get() or Caller()


def act_as(viewer: Viewer, caller: Caller | None = None) -> contextvars.Token[Viewer | None]:
    _caller.set(caller)
    return _viewer.set(viewer)


@contextmanager
def acting_as(viewer: Viewer, caller: Caller | None = None) -> Iterator[None]:
    caller_token = _caller.set(caller)
    token = _viewer.set(viewer)
    try:
        yield
    finally:
        _viewer.reset(token)
        _caller.reset(caller_token)
