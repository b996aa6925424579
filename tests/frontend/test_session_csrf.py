"""The UI's session writes to the API need the CSRF token; another site's form cannot make them.

A signed-in browser sends its session cookie with a cross-site form POST (``SameSite=Lax`` stops
that only for top-level POSTs from other sites in browsers that default to it); the API must
refuse it by itself, as the issue's report found it did not (202, and ~850 jobs in a fuzz run).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from indexing.models import IndexJob, Repository
from tests.accounts_support import make_account
from tests.factories import indexed_repository
from tests.indexing.git_server import init_bare_repo

pytestmark = pytest.mark.django_db


def browser_of(role: str) -> Client:
    client = Client(enforce_csrf_checks=True)  # as a browser: Django checks the token
    client.force_login(make_account(role))
    return client


def page_token(client: Client) -> str:
    return str(client.get("/repos/").context["csrf_token"])


def test_a_cross_site_form_post_to_reindex_is_refused_and_queues_nothing() -> None:
    repository = indexed_repository("acme/target", ["def f():\n    return 1"])
    jobs_before = IndexJob.objects.count()
    client = browser_of("write")
    forged = client.post(
        f"/api/repos/{repository.pk}/reindex",
        "x=1",
        content_type="application/x-www-form-urlencoded",
        HTTP_ORIGIN="https://evil.example",
        HTTP_REFERER="https://evil.example/page",
    )
    assert forged.status_code == 403
    assert "CSRF" in forged.json()["error"]["message"]
    assert IndexJob.objects.count() == jobs_before


def test_a_session_write_without_the_token_is_refused_with_it_accepted(tmp_path: Path) -> None:
    client = browser_of("write")
    init_bare_repo(str(tmp_path / "new.git"))
    body = {"url": str(tmp_path / "new.git")}
    refused = client.post("/api/repos", body, content_type="application/json")
    assert refused.status_code == 403
    assert not Repository.objects.exists()
    accepted = client.post(
        "/api/repos", body, content_type="application/json", HTTP_X_CSRFTOKEN=page_token(client)
    )
    assert accepted.status_code == 202, accepted.content
    assert Repository.objects.count() == 1


def test_the_settings_save_and_token_creation_need_the_token_too() -> None:
    client = browser_of("admin")
    put = client.put("/api/config", {"chat_model": "other"}, content_type="application/json")
    assert put.status_code == 403
    created = client.post("/api/tokens", {"name": "x"}, content_type="application/json")
    assert created.status_code == 403
    token = page_token(client)
    created = client.post(
        "/api/tokens", {"name": "x"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert created.status_code == 201 and created.json()["token"].startswith("rs_")
