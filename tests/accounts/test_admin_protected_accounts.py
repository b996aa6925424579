"""Whose account an administrator may change in Django's admin: not a superuser's, not another
administrator's (view only), so that nobody who is not a superuser sets the password of one and
signs in as them. Each refusal says why on the page and is on record."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from accounts.models import AuditEntry
from tests.accounts.test_admin_roles import form_data
from tests.accounts_support import make_account

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a brand new long password 123"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(User.objects.get(pk=user.pk))
    return client


def set_password(client: Client, user: Any) -> Any:
    return client.post(
        f"/admin/auth/user/{user.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )


def password_was_set(user: Any) -> bool:
    return User.objects.get(pk=user.pk).check_password(NEW_PASSWORD)


def said(response: Any) -> str:
    return html.unescape(response.content.decode())


def test_an_administrator_cannot_set_a_superusers_password_and_sign_in_as_them() -> None:
    root = User.objects.create_superuser("root", password="x-very-long-password")
    carol = make_account("admin", username="carol")
    client = signed_in(carol)

    page = client.get(f"/admin/auth/user/{root.pk}/password/")
    assert page.status_code == 403
    assert "root is a superuser: only a superuser changes a superuser's account" in said(page)
    refused = set_password(client, root)
    assert refused.status_code == 403
    assert not password_was_set(root)
    assert not Client().login(username="root", password=NEW_PASSWORD)
    entry = AuditEntry.objects.get(action="admin.auth.user.password")
    assert (entry.actor, entry.target, entry.outcome) == ("carol", "root", "refused")
    assert entry.details["error"] == "superuser" and entry.details["via"] == "admin"


def test_a_superusers_record_is_view_only_to_an_administrator() -> None:
    root = User.objects.create_superuser("root", password="x-very-long-password", email="r@x.org")
    carol = make_account("admin", username="carol")
    client = signed_in(carol)
    url = f"/admin/auth/user/{root.pk}/change/"

    page = client.get(url)
    assert page.status_code == 200  # viewing is fine
    assert 'name="email"' not in page.content.decode() and "r@x.org" in page.content.decode()
    data = form_data(signed_in(root).get(url))  # what root's own form posts
    data["email"] = "carol@evil.example"
    data.pop("is_active", None)
    refused = client.post(url, data)
    assert refused.status_code == 403 and "root is a superuser" in said(refused)
    root = User.objects.get(pk=root.pk)
    assert root.email == "r@x.org" and root.is_active
    deleted = client.post(f"/admin/auth/user/{root.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403 and "root is a superuser" in said(deleted)
    assert User.objects.filter(pk=root.pk).exists()
    verbs = set(AuditEntry.objects.filter(outcome="refused").values_list("action", flat=True))
    assert verbs == {"admin.auth.user.change", "admin.auth.user.delete"}


def test_an_administrator_cannot_take_over_another_administrator() -> None:
    make_account("admin", username="ada")
    carol = make_account("admin", username="carol")
    dana = make_account("admin", username="dana")
    client = signed_in(carol)

    refused = set_password(client, dana)
    assert refused.status_code == 403
    message = said(refused)
    assert "dana is an administrator: only a superuser changes another administrator's" in message
    assert "People page (/people/)" in message and "'manage.py role revoke dana'" in message
    assert not password_was_set(dana)
    assert client.post(f"/admin/auth/user/{dana.pk}/delete/", {"post": "yes"}).status_code == 403
    assert User.objects.filter(pk=dana.pk).exists()
    entry = AuditEntry.objects.get(action="admin.auth.user.password")
    assert (entry.actor, entry.target, entry.details["error"]) == ("carol", "dana", "administrator")

    # Their own password, a reader's, and a superuser setting an administrator's are fine.
    assert set_password(client, carol).status_code == 302 and password_was_set(carol)
    erin = make_account("read", username="erin")
    assert set_password(client, erin).status_code == 302 and password_was_set(erin)
    root = User.objects.create_superuser("root", password="x-very-long-password")
    assert set_password(signed_in(root), dana).status_code == 302 and password_was_set(dana)


def test_staff_with_the_change_user_permission_cannot_set_a_superusers_password() -> None:
    root = User.objects.create_superuser("root", password="x-very-long-password")
    sock = make_account("read", username="sock")
    sock.is_staff = True
    sock.save()
    sock.user_permissions.add(*Permission.objects.filter(codename__in=["change_user", "view_user"]))
    assert set_password(signed_in(sock), root).status_code == 403
    assert not password_was_set(root)


def test_nobody_deletes_or_deactivates_their_own_account_in_the_admin() -> None:
    make_account("admin", username="ada")
    carol = make_account("admin", username="carol")
    root = User.objects.create_superuser("root", password="x-very-long-password")
    for user in (carol, root):
        client = signed_in(user)
        refused = client.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})
        assert refused.status_code == 403
        assert "you cannot delete your own account" in said(refused)
        url = f"/admin/auth/user/{user.pk}/change/"
        data = form_data(client.get(url))
        data.pop("is_active")  # unticked
        page = client.post(url, data)
        assert page.status_code == 200  # the form again, with the reason
        assert "you cannot deactivate your own account" in said(page)
        assert User.objects.get(pk=user.pk).is_active
    rows = AuditEntry.objects.filter(outcome="refused", details__error="own_account")
    assert sorted(rows.values_list("actor", "action")) == [
        ("carol", "admin.auth.user.change"),
        ("carol", "admin.auth.user.delete"),
        ("root", "admin.auth.user.change"),
        ("root", "admin.auth.user.delete"),
    ]


def test_the_user_list_deletes_no_accounts_in_bulk() -> None:
    root = User.objects.create_superuser("root", password="x-very-long-password")
    ada = make_account("admin", username="ada")
    carol = make_account("admin", username="carol")
    for client in (signed_in(carol), signed_in(root)):
        listing = client.get("/admin/auth/user/")
        assert 'value="delete_selected"' not in listing.content.decode()
        client.post(
            "/admin/auth/user/",
            {"action": "delete_selected", "_selected_action": [root.pk, ada.pk, carol.pk],
             "post": "yes"},
        )  # fmt: skip
    assert User.objects.count() == 3


def test_an_administrator_still_deactivates_and_deletes_an_ordinary_account() -> None:
    carol = make_account("admin", username="carol")
    erin = make_account("read", username="erin")
    fay = make_account("write", username="fay")
    client = signed_in(carol)
    url = f"/admin/auth/user/{erin.pk}/change/"
    data = form_data(client.get(url))
    data.pop("is_active")
    assert client.post(url, data).status_code == 302
    assert not User.objects.get(pk=erin.pk).is_active
    assert client.post(f"/admin/auth/user/{fay.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not User.objects.filter(pk=fay.pk).exists()
