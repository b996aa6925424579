"""Who may call what: every REST operation by anonymous, each role and every kind of bad token.

Asserted for each pair: the status (401 with ``WWW-Authenticate: Bearer`` when not
authenticated, 403 when the role is too low, neither when allowed) and, for refused writes,
that nothing changed: the repository, its jobs and the model configuration are as before.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from indexing.models import IndexJob, Repository
from tests.accounts_support import make_account, token_for
from tests.factories import indexed_repository

ALLOWED, UNAUTHENTICATED, FORBIDDEN = "allowed", 401, 403

# (method, path template, body, least role that may call it)
OPERATIONS: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("get", "/api/repos", None, "read"),
    ("get", "/api/repos/{repo}", None, "read"),
    ("get", "/api/repos/{repo}/jobs", None, "read"),
    ("get", "/api/jobs/{job}", None, "read"),
    ("post", "/api/search", {"query": "parse_header"}, "read"),
    ("post", "/api/localize", {"issue": "`parse_header` fails"}, "read"),
    ("get", "/api/config", None, "read"),
    ("get", "/api/tokens", None, "read"),
    ("get", "/api/schema", None, "read"),
    ("post", "/api/tokens", {"name": "matrix", "scope": "read"}, "read"),
    ("post", "/api/repos", {"url": "https://example.org/team/new.git"}, "write"),
    ("patch", "/api/repos/{repo}", {"poll_interval_secs": 0}, "write"),
    ("post", "/api/repos/{repo}/reindex", None, "write"),
    ("get", "/api/repos/{repo}/webhook", None, "write"),
    ("post", "/api/repos/{repo}/webhook/rotate", None, "write"),
    ("delete", "/api/repos/{repo}", None, "write"),
    ("put", "/api/config", {"chat_provider": "none"}, "admin"),
    ("get", "/api/audit", None, "admin"),
]
RANK = {"read": 1, "write": 2, "admin": 3}


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    repository = indexed_repository("matrix", ["def parse_header(raw):\n    return raw\n"])
    job = IndexJob.objects.create(repository=repository)
    return {"repo": str(repository.pk), "job": job.pk, "repository": repository}


def _snapshot(repository: Repository) -> tuple[Any, ...]:
    from llm.services import config_payload

    row = Repository.objects.filter(pk=repository.pk).values().first()
    return (
        row,
        Repository.objects.count(),
        IndexJob.objects.count(),
        repository.webhook_secret,
        config_payload(),
    )


def _call(client: APIClient, method: str, path: str, body: dict[str, Any] | None) -> Any:
    if body is None:
        return getattr(client, method)(path)
    return getattr(client, method)(path, body, format="json")


def _client_for(kind: str) -> APIClient:
    client = APIClient()
    if kind == "anonymous":
        return client
    if kind in RANK:
        secret = token_for(make_account(kind))
    elif kind == "expired":
        secret = token_for(make_account("admin"))
        ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    elif kind == "revoked":
        secret = token_for(make_account("admin"))
        ApiToken.objects.update(revoked_at=timezone.now())
    elif kind == "deleted user":
        user = make_account("admin")
        secret = token_for(user)
        user.delete()
    elif kind == "inactive user":
        user = make_account("admin")
        secret = token_for(user)
        user.is_active = False
        user.save()
    elif kind == "malformed":
        secret = "not a token at all"
    else:
        raise AssertionError(kind)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _expected(kind: str, least: str) -> Any:
    if kind not in RANK:
        return UNAUTHENTICATED
    return ALLOWED if RANK[kind] >= RANK[least] else FORBIDDEN


KINDS = ["anonymous", "read", "write", "admin", "expired", "revoked", "deleted user",
         "inactive user", "malformed"]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("method", "template", "body", "least"), OPERATIONS, ids=[f"{o[0]} {o[1]}" for o in OPERATIONS]
)
def test_each_operation_answers_each_caller_as_its_role_allows(
    world: dict[str, Any], kind: str, method: str, template: str, body: Any, least: str
) -> None:
    client = _client_for(kind)
    before = _snapshot(world["repository"])
    response = _call(client, method, template.format(**world), body)
    expected = _expected(kind, least)
    if expected == ALLOWED:
        assert response.status_code not in (401, 403), response.content
        assert response.status_code < 500, response.content
        return
    assert response.status_code == expected, response.content
    if template != "/api/schema":  # that one answers in the format asked for (YAML by default)
        assert set(response.json()) == {"error"}  # the one error shape
    if expected == UNAUTHENTICATED:
        assert response["WWW-Authenticate"].startswith("Bearer")
    if method != "get":
        assert _snapshot(world["repository"]) == before  # nothing changed


@pytest.mark.django_db
def test_health_stays_open_but_says_little_without_an_account() -> None:
    """Anonymous callers get the verdict and what is down, nothing more; an account gets each
    part's report. Both agree: 200 with nothing down, else 503 naming exactly the parts whose
    report is not ok (here the suite's real database and broker are up; whether a worker
    answers depends on which tests ran before, so the answer is checked either way)."""
    anonymous = APIClient().get("/api/health")
    signed_in = _client_for("read").get("/api/health")
    report = signed_in.json()
    assert {"database", "broker", "workers", "models"} <= set(report)
    assert report["database"]["ok"] and report["broker"]["ok"], report
    down = [part for part in ("database", "broker", "workers") if not report[part]["ok"]]
    assert anonymous.json() == {"status": "unavailable" if down else "ok", "down": down}
    assert anonymous.status_code == signed_in.status_code == (503 if down else 200)
    # A stale token does not turn an orchestrator's healthcheck into a 401: it is anonymous.
    stale = _client_for("revoked").get("/api/health")
    assert (stale.status_code, stale.json()) == (anonymous.status_code, anonymous.json())
