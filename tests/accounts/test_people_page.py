"""The People page (``/people/``): administrators see every account's role, groups and tokens
and change them; everyone else is refused and is not offered the link."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEntry
from accounts.roles import Role, role_of
from accounts.tokens import token_for_secret
from tests.accounts_support import make_account, token_for

pytestmark = pytest.mark.django_db


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def shown_messages(response: Any) -> list[str]:
    found = re.findall(r'<li class="\w+" role="\w+">([^<]*)</li>', response.content.decode())
    return [html.unescape(text) for text in found]


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


@pytest.mark.parametrize("role", ["read", "write"])
def test_a_non_administrator_is_refused_every_page_and_change_and_sees_no_link(role: str) -> None:
    dana = make_account("read", username="dana")
    token = token_for(dana, name="ci")
    Group.objects.create(name="team-a")
    client = signed_in(make_account(role))
    assert 'href="/people/"' not in page(client, "/")
    for url in ("/people/", f"/people/{dana.pk}/"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "People and roles are for administrators." in response.content.decode()
    token_id = ApiToken.objects.get().pk
    posts = [
        (f"/people/{dana.pk}/role", {"role": "admin"}),
        (f"/people/{dana.pk}/groups", {"action": "add", "group": "team-a"}),
        ("/people/groups", {"name": "team-b"}),
        (f"/people/{dana.pk}/tokens", {"name": "stolen", "scope": "read"}),
        (f"/people/{dana.pk}/tokens/{token_id}/revoke", {}),
    ]
    for url, body in posts:
        response = client.post(url, body)
        assert response.status_code == 403, url
        assert "rs_" not in response.content.decode()
    assert role_of(fresh(dana)) == Role.READ
    assert not fresh(dana).groups.exists() and not Group.objects.filter(name="team-b").exists()
    assert ApiToken.objects.count() == 1 and token_for_secret(token) is not None
    assert not AuditEntry.objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in() -> None:
    response = Client().get("/people/")
    assert response.status_code == 302 and response["Location"].startswith("/sign-in?next=")
    assert Client().post("/people/groups", {"name": "x"}).status_code == 302
    assert not Group.objects.filter(name="x").exists()


def test_the_page_lists_each_account_with_role_groups_active_and_tokens() -> None:
    admin = make_account("admin", username="ada")
    dana = make_account("write", username="dana", groups=["team-a"])
    token_for(dana, name="ci")
    robin = make_account("read", username="robin")
    robin.is_active = False
    robin.save()
    html = page(signed_in(admin), "/people/")
    assert 'href="/people/"' in html and 'aria-current="page"' in html
    row = re.search(r'<tr data-username="dana">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = row.group(1)
    assert '<option value="write" selected>' in cells
    assert '<span class="badge">team-a</span>' in cells and "<td>1</td>" in cells
    robin_row = re.search(r'<tr data-username="robin">(.*?)</tr>', html, re.S)
    assert robin_row is not None and '<span class="warn">no</span>' in robin_row.group(1)
    groups = re.search(r'<tr data-group="team-a">(.*?)</tr>', html, re.S)
    assert groups is not None and "dana" in groups.group(1)
    assert 'data-group="reposearch-write"' not in html  # a role, not a visibility group


def test_an_administrator_changes_a_role_and_it_is_audited() -> None:
    admin = make_account("admin", username="ada")
    dana = make_account("read", username="dana")
    client = signed_in(admin)
    response = client.post(f"/people/{dana.pk}/role", {"role": "write", "back": "people"})
    assert response.status_code == 303 and response["Location"] == "/people/"
    assert role_of(fresh(dana)) == Role.WRITE
    assert shown_messages(client.get("/people/")) == ["dana: read → write."]
    entry = AuditEntry.objects.get(action="account.role")
    assert (entry.actor, entry.target) == ("ada", "dana")
    assert entry.details == {"from": "read", "to": "write", "via": "people page"}
    # From the person's own page, back to it.
    response = client.post(f"/people/{dana.pk}/role", {"role": "read"})
    assert response["Location"] == f"/people/{dana.pk}/"
    assert role_of(fresh(dana)) == Role.READ


def test_refusals_are_shown_and_change_nothing() -> None:
    admin = make_account("admin", username="ada")
    dana = make_account("read", username="dana")
    client = signed_in(admin)
    own = client.post(f"/people/{admin.pk}/role", {"role": "read"}, follow=True)
    assert shown_messages(own) == ["you cannot lower your own role; another administrator can"]
    assert role_of(fresh(admin)) == Role.ADMIN
    bad = client.post(f"/people/{dana.pk}/role", {"role": "owner"}, follow=True)
    assert "unknown role 'owner'" in shown_messages(bad)[0]
    unknown = client.post(
        f"/people/{dana.pk}/groups", {"action": "add", "group": "nope"}, follow=True
    )
    assert "no group named 'nope'" in shown_messages(unknown)[0]
    above = client.post(f"/people/{dana.pk}/tokens", {"name": "x", "scope": "admin"}, follow=True)
    assert "admin is above dana's role (read)" in shown_messages(above)[0]
    assert client.post("/people/999999/role", {"role": "write"}).status_code == 404
    assert not AuditEntry.objects.filter(outcome="ok").exists()  # nothing changed
    # Each refusal is on record (tests below), and nothing else.
    assert set(AuditEntry.objects.values_list("action", "outcome")) == {
        ("account.role", "refused"),
        ("group.add_member", "refused"),
        ("token.create", "refused"),
    }


def test_a_role_posted_at_any_length_is_quoted_short_on_the_page_and_in_the_audit_log() -> None:
    ada = make_account("admin", username="ada")
    bob = make_account("read", username="bob")
    client = signed_in(ada)
    refused = client.post(f"/people/{bob.pk}/role", {"role": "x" * 200_000}, follow=True)
    said = shown_messages(refused)[0]
    assert "unknown role 'xxxxxxxxxxxxxxxxxxxx…': expected read, write or admin" in said
    assert len(said) < 200
    entry = AuditEntry.objects.get(action="account.role")
    assert entry.outcome == "refused" and entry.details["error"] == "invalid_role"
    assert entry.details["to"] == "x" * 20 and len(entry.details["message"]) < 200


def test_a_refused_self_demotion_is_recorded_with_its_reason() -> None:
    ada = make_account("admin", username="ada")
    make_account("admin", username="bea")  # so that only the self-demotion rule refuses
    signed_in(ada).post(f"/people/{ada.pk}/role", {"role": "read"})
    assert role_of(fresh(ada)) == Role.ADMIN
    entry = AuditEntry.objects.get(action="account.role")
    assert (entry.actor, entry.target, entry.outcome) == ("ada", "ada", "refused")
    assert entry.details == {
        "from": "admin",
        "to": "read",
        "error": "own_role",
        "message": "you cannot lower your own role; another administrator can",
        "via": "people page",
    }


def test_visibility_groups_are_created_and_people_added_and_removed() -> None:
    admin = make_account("admin", username="ada")
    dana = make_account("read", username="dana")
    client = signed_in(admin)
    created = client.post("/people/groups", {"name": "payments"}, follow=True)
    assert "Created the visibility group payments." in shown_messages(created)[0]
    assert '<tr data-group="payments">' in created.content.decode()
    person = page(client, f"/people/{dana.pk}/")
    assert '<option value="payments">payments</option>' in person
    added = client.post(
        f"/people/{dana.pk}/groups", {"action": "add", "group": "payments"}, follow=True
    )
    assert shown_messages(added) == ["dana added to payments."]
    assert list(fresh(dana).groups.values_list("name", flat=True)) == ["payments"]
    client.post(f"/people/{dana.pk}/groups", {"action": "remove", "group": "payments"})
    assert not fresh(dana).groups.exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", "actor")) == [
        ("group.create", "ada"),
        ("group.add_member", "ada"),
        ("group.remove_member", "ada"),
    ]


def test_refused_group_and_token_changes_are_recorded_as_refused() -> None:
    """roles.md: refused attempts are recorded too, each with what was asked, cut to a
    readable length."""
    admin = make_account("admin", username="ada")
    dana = make_account("read", username="dana")
    client = signed_in(admin)
    posts = [
        ("/people/groups", {"name": "reposearch-admin"}),
        (f"/people/{dana.pk}/groups", {"action": "add", "group": "nowhere"}),
        (f"/people/{dana.pk}/groups", {"action": "add", "group": "g" * 200_000}),
        (f"/people/{dana.pk}/tokens", {"name": "ci", "scope": "admin"}),
    ]
    for url, body in posts:
        response = client.post(url, body, follow=True)
        (said,) = shown_messages(response)
        assert len(said) < 400, said[:200]
    assert not fresh(dana).groups.exists() and not Group.objects.filter(name="nowhere").exists()
    assert not ApiToken.objects.exists()
    rows = AuditEntry.objects.order_by("id")
    assert [(e.action, e.outcome, e.details["error"]) for e in rows] == [
        ("group.create", "refused", "role_group"),
        ("group.add_member", "refused", "unknown_group"),
        ("group.add_member", "refused", "unknown_group"),
        ("token.create", "refused", "scope_above_role"),
    ]
    assert rows[1].target == "nowhere" and rows[1].details["user"] == "dana"
    assert len(rows[2].target) == 100 and rows[2].details["via"] == "people page"
    assert rows[3].details["owner"] == "dana" and rows[3].details["name"] == "ci"


def test_a_token_made_for_someone_is_shown_once_works_and_can_be_revoked() -> None:
    admin = make_account("admin", username="ada")
    dana = make_account("write", username="dana")
    client = signed_in(admin)
    form = page(client, f"/people/{dana.pk}/")
    scopes = re.search(r'id="token-scope" name="scope">(.*?)</select>', form)
    assert scopes is not None  # a token never exceeds its owner's role
    assert re.findall(r'<option value="(\w+)"', scopes.group(1)) == ["read", "write"]
    response = client.post(
        f"/people/{dana.pk}/tokens", {"name": "ci", "scope": "write", "expires_in_days": "30"}
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = re.search(r'id="new-token-value"[^>]*value="(rs_[^"]+)"', response.content.decode())
    assert secret is not None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret.group(1)}")
    assert api.get("/api/repos").status_code == 200
    token = ApiToken.objects.get(name="ci")
    assert token.user == dana and token.scope == "write" and token.expires_at is not None
    again = page(client, f"/people/{dana.pk}/")
    assert secret.group(1) not in again and f"<code>{token.prefix}…</code>" in again

    revoked = client.post(f"/people/{dana.pk}/tokens/{token.pk}/revoke", follow=True)
    assert shown_messages(revoked) == ["Revoked ci of dana."]
    assert api.get("/api/repos").status_code == 401
    entries = AuditEntry.objects.filter(action__startswith="token.").order_by("id")
    assert [(e.action, e.actor, e.details["owner"]) for e in entries] == [
        ("token.create", "ada", "dana"),
        ("token.revoke", "ada", "dana"),
    ]
    # Another account's token is not revoked through dana's page.
    other = make_account("read")
    token_for(other, name="theirs")
    theirs = ApiToken.objects.get(name="theirs")
    assert client.post(f"/people/{dana.pk}/tokens/{theirs.pk}/revoke").status_code == 404
    assert ApiToken.objects.get(pk=theirs.pk).revoked_at is None


def test_an_administrator_makes_no_token_for_a_superuser_or_another_administrator() -> None:
    """A token acts as its owner: one made for root or ben would let ada act under their name,
    as setting their password would (the admin refuses that too)."""
    ada = make_account("admin", username="ada")
    ben = make_account("admin", username="ben")
    root = User.objects.create_superuser("root", "root@example.com", "x")
    client = signed_in(ada)
    for owner, reason in ((root, "root is a superuser"), (ben, "ben is an administrator")):
        response = client.post(
            f"/people/{owner.pk}/tokens", {"name": "as", "scope": "read"}, follow=True
        )
        (said,) = shown_messages(response)
        assert reason in said and "only a superuser" in said and "makes its tokens" in said
        assert not ApiToken.objects.filter(user=owner).exists()
    made = client.post(f"/people/{ada.pk}/tokens", {"name": "mine", "scope": "admin"})
    assert made.status_code == 200 and ApiToken.objects.filter(user=ada, name="mine").exists()
    by_superuser = signed_in(root).post(f"/people/{ben.pk}/tokens", {"name": "ci", "scope": "read"})
    assert by_superuser.status_code == 200 and ApiToken.objects.filter(user=ben).exists()


def test_the_forms_need_the_csrf_token() -> None:
    dana = make_account("read", username="dana")
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_account("admin"))
    assert client.post(f"/people/{dana.pk}/role", {"role": "admin"}).status_code == 403
    assert role_of(fresh(dana)) == Role.READ
