"""A query parameter an API endpoint does not read is refused, not ignored: before, ``GET
/api/repos?status=failed`` listed every repository, as if the filter had been applied."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import EndpointEnumerator

from accounts.models import AuditEntry
from tests.accounts_support import session_client
from tests.refusals import error_of
from tests.reposearch.test_api_schemathesis import _generated_schema

pytestmark = pytest.mark.django_db


def test_a_filter_the_endpoint_does_not_take_is_a_400_naming_what_it_takes() -> None:
    client = session_client()
    response = client.get("/api/repos", {"status": "failed"})
    assert response.status_code == 400
    assert error_of(response) == {
        "code": "unknown_parameter",
        "message": "unknown query parameter 'status' (/api/repos takes no query parameters)",
        "details": {"unknown": ["status"], "parameters": []},
    }
    typo = client.get("/api/audit", {"acton": "token.create"})
    assert typo.status_code == 400
    assert "did you mean action?" in error_of(typo)["message"]
    assert error_of(typo)["details"]["parameters"] == [
        *("action", "actor", "before", "limit", "since", "until")
    ]


def test_another_search_apis_name_for_a_parameter_gets_the_name_here() -> None:
    client = session_client()
    for name, meant in (("query", "q"), ("language", "lang"), ("k", "limit"), ("Q", "q")):
        response = client.get("/api/symbols", {"q": "retry", name: "x"} | {"q": "retry"})
        assert response.status_code == 400
        assert error_of(response)["message"].startswith(
            f"unknown query parameter {name!r} — did you mean {meant}? (/api/symbols takes"
        )


def test_the_parameters_an_endpoint_reads_are_applied() -> None:
    client = session_client()
    AuditEntry.objects.create(actor="ann", action="token.create", outcome="ok")
    AuditEntry.objects.create(actor="bob", action="repository.add", outcome="ok")
    found = client.get("/api/audit", {"action": "token.create", "format": "json"})
    assert found.status_code == 200
    assert [entry["actor"] for entry in found.json()["results"]] == ["ann"]
    assert client.get("/api/symbols", {"q": "retry", "lang": "python"}).status_code == 200
    assert client.get("/api/schema", {"format": "json"}).status_code == 200


def test_health_takes_a_monitors_cache_buster() -> None:
    # Probes and monitors add such parameters; a 400 would read as "down".
    assert session_client().get("/api/health", {"_": "1733500000"}).status_code != 400


def _view_classes() -> dict[tuple[str, str], Any]:
    return {
        (path, method.lower()): callback.cls
        for path, _regex, method, callback in EndpointEnumerator().get_api_endpoints()
    }


def test_every_get_takes_exactly_the_query_parameters_its_schema_lists() -> None:
    # (Writes take their input in the body, which the schema closes to unknown fields.)
    views = _view_classes()
    checked = []
    for path, operations in _generated_schema()["paths"].items():
        if "get" not in operations:
            continue
        listed = {p["name"] for p in operations["get"].get("parameters", []) if p["in"] == "query"}
        taken = getattr(views[(path, "get")], "query_parameters", frozenset())
        if taken is None:  # not checked (health)
            continue
        assert set(taken) == listed, path
        checked.append(path)
    assert {"/api/repos", "/api/audit", "/api/symbols", "/api/tokens"} <= set(checked)


def test_a_get_with_parameters_on_a_post_only_endpoint_is_a_405_naming_post() -> None:
    # A user tried GET /api/search?query=x and was told "/api/search takes no query
    # parameters", as if the parameter were the mistake; the method is.
    response = session_client().get("/api/search", {"query": "x"})
    assert response.status_code == 405
    assert "POST" in response["Allow"]
    assert error_of(response) == {
        "code": "method_not_allowed",
        "message": 'Method "GET" not allowed. Use POST.',
        "details": {},
    }
