"""For tests of refused requests: the one error shape every refusal answers with, and a resolver
that makes every host name public (so URL checks pass offline, with nothing looked up)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

PUBLIC_ADDRESS = "93.184.215.14"  # a documentation address: public, never contacted


def error_of(response: Any) -> dict[str, Any]:
    """The ``error`` of a JSON ``{"error": {"code", "message", "details"}}`` answer (asserted)."""
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    error: dict[str, Any] = body["error"]
    return error


@pytest.fixture
def public_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every host resolves to a public address, except ``nonexistent.invalid`` (no such name)."""

    def fake_getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host == "nonexistent.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_ADDRESS, port or 443))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
