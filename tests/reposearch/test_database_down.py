"""With the database unreachable, the API answers 503 in the one error shape, leaking nothing."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.accounts_support import token_client


@pytest.fixture
def api() -> APIClient:
    """Signed in before the database goes away (its token is checked on every request)."""
    return token_client()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def database_down() -> Iterator[Callable[[], None]]:
    """The app's database address now leads nowhere; calling the fixture's value restores it."""
    connection.close()
    real_port = connection.settings_dict["PORT"]
    connection.settings_dict["PORT"] = str(_closed_port())

    def bring_back() -> None:
        connection.close()
        connection.settings_dict["PORT"] = real_port

    try:
        yield bring_back
    finally:
        bring_back()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/search", {"query": "parse_http_header"}),
        ("get", "/api/repos", None),
        ("post", "/api/repos", {"url": "https://example.org/a/b.git"}),
    ],
)
def test_the_api_answers_503_while_the_database_is_down(
    api: APIClient, database_down: Callable[[], None], method: str, path: str, body: dict | None
) -> None:
    response = getattr(api, method)(path, body, format="json")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "database_unavailable"
    assert "try again" in error["message"]
    assert "127.0.0.1" not in response.content.decode()  # no host, port or driver text


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_again_when_the_database_is_back(
    api: APIClient, database_down: Callable[[], None]
) -> None:
    assert api.get("/api/repos").status_code == 503
    database_down()
    assert api.get("/api/repos").status_code == 200
