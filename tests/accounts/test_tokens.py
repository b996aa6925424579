"""Personal API tokens: created with the secret shown once, stored hashed, listed, revoked,
expiring, capped by their user's role; ``manage.py createtoken``."""

from __future__ import annotations

import io
import logging
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.management.commands.createtoken import Command as CreateToken
from accounts.models import ApiToken, AuditEntry
from accounts.roles import Role, grant_role
from tests.accounts_support import make_account, token_client

pytestmark = pytest.mark.django_db


def _with(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _database_holds(text: str) -> bool:
    """Whether ``text`` is anywhere in the token and audit tables."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM accounts_apitoken t WHERE t::text LIKE %s", [f"%{text}%"]
        )
        tokens = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM accounts_auditentry a WHERE a::text LIKE %s", [f"%{text}%"]
        )
        audit = cursor.fetchone()[0]
    return bool(tokens or audit)


def test_a_created_token_is_shown_once_stored_hashed_and_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    owner = token_client("write")
    created = owner.post(
        "/api/tokens", {"name": "ci", "scope": "read", "expires_in_days": 30}, format="json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    secret = body["token"]
    assert secret.startswith("rs_") and body["prefix"] == secret[:8]
    assert body["scope"] == "read" and body["expires_at"] is not None

    assert _with(secret).get("/api/repos").status_code == 200
    # Everywhere after the creation answer: never the secret.
    listed = owner.get("/api/tokens")
    detail = owner.get(f"/api/tokens/{body['id']}")
    audit = token_client("admin").get("/api/audit")
    for later in (listed, detail, audit):
        assert later.status_code == 200
        assert secret not in later.content.decode()
    assert "ci" in [row["name"] for row in listed.json()["results"]]
    assert not _database_holds(secret)
    assert secret not in caplog.text
    token = ApiToken.objects.get(pk=body["id"])
    assert token.last_used_at is not None  # the GET above used it


def test_a_revoked_token_stops_working_at_once() -> None:
    owner = token_client("read")
    made = owner.post("/api/tokens", {"name": "laptop"}, format="json").json()
    assert _with(made["token"]).get("/api/repos").status_code == 200
    assert owner.delete(f"/api/tokens/{made['id']}").status_code == 204
    refused = _with(made["token"]).get("/api/repos")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "unknown, expired or revoked API token"
    listed = owner.get("/api/tokens").json()["results"]
    assert next(row for row in listed if row["id"] == made["id"])["revoked_at"] is not None


def test_an_expired_token_is_refused() -> None:
    owner = token_client("read")
    made = owner.post("/api/tokens", {"name": "short", "expires_in_days": 1}, format="json").json()
    ApiToken.objects.filter(pk=made["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert _with(made["token"]).get("/api/repos").status_code == 401


def test_a_token_never_exceeds_its_users_role() -> None:
    reader = token_client("read")
    refused = reader.post("/api/tokens", {"name": "more", "scope": "write"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["details"]["fields"]["scope"]
    assert ApiToken.objects.filter(name="more").count() == 0

    writer = make_account("write")
    write_token = token_client(user=writer)
    assert write_token.post("/api/repos/nope/reindex").status_code == 404  # allowed, unknown id
    grant_role(writer, Role.READ)  # demoted: the write token now acts as read
    assert write_token.post("/api/repos/nope/reindex").status_code == 403


def test_a_read_token_cannot_mint_a_write_token_for_its_write_user() -> None:
    writer = make_account("write")
    read_scoped = token_client(user=writer, scope="read")
    refused = read_scoped.post("/api/tokens", {"name": "wider", "scope": "write"}, format="json")
    assert refused.status_code == 403  # well-formed, not allowed (schemathesis: not a 400)
    assert "above what this request acts as" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "a", "scope": "root"}, "scope"),
        ({"name": "a", "expires_in_days": 0}, "expires_in_days"),
        ({"name": "a", "expires_in_days": "soon"}, "expires_in_days"),
        ({"name": "a", "expires_in_days": 10**9}, "expires_in_days"),
    ],
)
def test_bad_token_requests_are_400_and_make_nothing(body: dict, field: str) -> None:
    client = token_client("admin")
    before = ApiToken.objects.count()
    response = client.post("/api/tokens", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["message"]
    assert ApiToken.objects.count() == before


def test_unknown_fields_are_refused() -> None:
    response = token_client("read").post(
        "/api/tokens", {"name": "a", "secret": "mine"}, format="json"
    )
    assert response.status_code == 400
    assert "unknown fields: secret" in response.json()["error"]["message"]


def test_a_scope_that_is_no_role_lists_the_roles() -> None:
    response = token_client("read").post(
        "/api/tokens", {"name": "a", "scope": "Write"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        'scope: "Write" is not a valid choice: did you mean write?; the choices: read, write, admin'
    )


def test_others_tokens_are_invisible_except_to_admins() -> None:
    alice = token_client("write")
    theirs = alice.post("/api/tokens", {"name": "alice-ci"}, format="json").json()
    bob = token_client("write")
    assert bob.get(f"/api/tokens/{theirs['id']}").status_code == 404
    assert bob.delete(f"/api/tokens/{theirs['id']}").status_code == 404
    assert "alice-ci" not in [row["name"] for row in bob.get("/api/tokens?all=1").json()["results"]]
    assert ApiToken.objects.get(pk=theirs["id"]).revoked_at is None

    admin = token_client("admin")
    everyone = admin.get("/api/tokens?all=1").json()["results"]
    assert "alice-ci" in [row["name"] for row in everyone]
    assert admin.delete(f"/api/tokens/{theirs['id']}").status_code == 204
    assert _with(theirs["token"]).get("/api/repos").status_code == 401


def test_createtoken_prints_the_secret_once_and_records_it() -> None:
    make_account("write", username="deploy")
    out = io.StringIO()
    call_command("createtoken", "deploy", "ci", "--scope", "write", stdout=out)
    secret = out.getvalue().strip()
    assert _with(secret).post("/api/repos/nope/reindex").status_code == 404  # write: allowed
    entry = AuditEntry.objects.get(action="token.create")
    # Made by whoever ran the command, not by the account: no actor, the owner named.
    assert entry.actor == "" and entry.details["owner"] == "deploy"
    assert entry.details["name"] == "ci" and entry.details["via"] == "manage.py createtoken"
    assert not _database_holds(secret)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nobody", "ci"], "no account named 'nobody'"),
        (["reader", "ci", "--scope", "admin"], r"admin is above reader's role \(read\)"),
        (["reader", "ci", "--expires-in-days", "0"], "between 1 and"),
    ],
)
def test_createtoken_refuses_clearly(args: list[str], message: str) -> None:
    make_account("read", username="reader")
    with pytest.raises(CommandError, match=message):
        call_command("createtoken", *args, stdout=io.StringIO())
    assert ApiToken.objects.count() == 0


def test_a_403_from_the_tokens_scope_names_the_scope_and_how_to_make_a_wider_token() -> None:
    make_account("write", username="bob")
    out = io.StringIO()
    call_command("createtoken", "bob", "cli", stdout=out)  # no --scope: read
    refused = _with(out.getvalue().strip()).post(
        "/api/repos", {"url": "https://example.org/team/new.git"}, format="json"
    )
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert "this token ('cli') has scope read, though its account bob holds write" in message
    assert "Tokens page (/tokens/)" in message
    assert "'manage.py createtoken bob NAME --scope write'" in message
    # The command it names makes a token that is allowed.
    out = io.StringIO()
    call_command("createtoken", "bob", "cli-write", "--scope", "write", stdout=out)
    assert _with(out.getvalue().strip()).post("/api/repos/nope/reindex").status_code == 404


def test_a_403_from_the_accounts_role_names_the_role_and_no_token() -> None:
    reader = token_client("read")
    refused = reader.post("/api/repos/nope/reindex")
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert message == "this needs the write role; your account's role is read"
    # A session has no token: the account's role is what falls short.
    session = APIClient()
    session.force_login(make_account("write"))
    refused = session.get("/api/audit")
    assert refused.json()["error"]["message"] == (
        "this needs the admin role; your account's role is write"
    )
    # A read token of a write account, where admin is needed: the account falls short too, and
    # its role is write (the token's scope, read, is not the account's role).
    bob = make_account("write", username="bob")
    refused = token_client(user=bob, scope="read").get("/api/audit")
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == (
        "this needs the admin role; your account's role is write"
    )


def test_createtokens_help_says_the_default_scope_is_read() -> None:
    out = io.StringIO()
    CreateToken().create_parser("manage.py", "createtoken").print_help(out)
    text = " ".join(out.getvalue().split())
    assert "can only read unless given --scope write or admin" in text
    assert "(default: read)" in text
