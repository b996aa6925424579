"""A token that makes a token: the child never outlives, outranks or survives its parent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEntry
from accounts.tokens import create_token
from tests.accounts_support import make_account, session_client

pytestmark = pytest.mark.django_db


def _with(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _one_day_write_token() -> tuple[object, str, ApiToken]:
    user = make_account("admin")
    made = create_token(user, "one day", "write", expires_in_days=1)
    return user, made.secret, made.token


def test_a_one_day_token_cannot_mint_a_token_that_never_expires() -> None:
    _, secret, parent = _one_day_write_token()
    made = _with(secret).post("/api/tokens", {"name": "child"}, format="json")
    assert made.status_code == 201, made.content
    child = ApiToken.objects.get(pk=made.json()["id"])
    assert child.expires_at == parent.expires_at  # no expiry asked: the parent's
    assert made.json()["parent"] == parent.pk
    assert made.json()["expires_at"] is not None


def test_a_child_may_not_ask_for_more_days_than_its_parent_has() -> None:
    _, secret, parent = _one_day_write_token()
    refused = _with(secret).post(
        "/api/tokens", {"name": "child", "expires_in_days": 30}, format="json"
    )
    assert refused.status_code == 400, refused.content
    error = refused.json()["error"]
    assert "expires_in_days" in error["details"]["fields"]
    assert "beyond the expiry of the token making it" in str(error["details"]["fields"])
    assert ApiToken.objects.filter(parent=parent).count() == 0
    shorter = _with(secret).post(
        "/api/tokens", {"name": "child", "expires_in_days": 1}, format="json"
    )
    # Exactly one day from now is a moment after the parent's own one day: still beyond it.
    assert shorter.status_code == 400


def test_a_child_is_no_higher_than_its_parent() -> None:
    _, secret, _ = _one_day_write_token()
    higher = _with(secret).post("/api/tokens", {"name": "c", "scope": "admin"}, format="json")
    assert higher.status_code == 403
    assert "scope" in higher.json()["error"]["details"]["fields"]
    same = _with(secret).post("/api/tokens", {"name": "c", "scope": "write"}, format="json")
    assert same.status_code == 201


def test_revoking_a_parent_revokes_its_children_and_grandchildren() -> None:
    user = make_account("write")
    parent = create_token(user, "parent", "write")
    child = _with(parent.secret).post("/api/tokens", {"name": "child"}, format="json").json()
    grandchild = _with(child["token"]).post("/api/tokens", {"name": "grand"}, format="json").json()
    assert grandchild["parent"] == child["id"]
    for secret in (child["token"], grandchild["token"]):
        assert _with(secret).get("/api/repos").status_code == 200

    owner = session_client(user=user)
    assert owner.delete(f"/api/tokens/{parent.token.pk}").status_code == 204
    for secret in (parent.secret, child["token"], grandchild["token"]):
        assert _with(secret).get("/api/repos").status_code == 401
    revoked = ApiToken.objects.filter(pk__in=[child["id"], grandchild["id"]])
    assert all(token.revoked_at is not None for token in revoked)
    audit = AuditEntry.objects.filter(action="token.revoke", target=str(parent.token.pk)).get()
    assert audit.details["revoked_with_it"] == [child["id"], grandchild["id"]]


def test_a_child_stops_working_when_its_parent_expires() -> None:
    user = make_account("read")
    parent = create_token(user, "parent", "read")
    child = _with(parent.secret).post("/api/tokens", {"name": "child"}, format="json").json()
    ApiToken.objects.filter(pk=parent.token.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert _with(child["token"]).get("/api/repos").status_code == 401


def test_a_signed_in_user_still_makes_top_level_tokens() -> None:
    made = session_client("read").post(
        "/api/tokens", {"name": "laptop"}, content_type="application/json"
    )
    assert made.status_code == 201
    assert made.json()["parent"] is None and made.json()["expires_at"] is None
