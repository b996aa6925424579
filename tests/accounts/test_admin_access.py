"""Administrators use Django's admin, whichever way they became administrators.

The People page sends administrators to the admin's *Add user* and *Repositories* pages; an
account made an administrator with ``manage.py role grant``, on the People page or by the
identity provider's groups opens them (``is_staff`` set with the role, cleared when it goes),
and may do there what a superuser may, short of making superusers.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.test import Client

from accounts.identity.groups import sync_groups
from accounts.models import AuditEntry
from accounts.roles import Role, role_of
from indexing.models import Repository
from tests.accounts.test_admin_roles import form_data
from tests.accounts_support import make_account

pytestmark = pytest.mark.django_db
NOT_AUTHORIZED = "but are not authorized to access this page"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def admin_links(html: str) -> list[str]:
    return re.findall(r'href="(/admin/[^"]*)"', html)


def test_an_administrator_made_by_the_role_command_uses_the_admin_pages_the_people_page_links() -> (
    None
):
    make_account("admin", username="ada")
    carol = make_account("read", username="carol")
    call_command("role", "grant", "carol", "admin")
    client = signed_in(fresh(carol))

    people = client.get("/people/").content.decode()
    links = admin_links(people)
    assert "/admin/auth/user/add/" in links and "/admin/indexing/repository/" in links
    assert 'href="/admin/"' in client.get("/").content.decode()  # the header's Admin link

    add_page = client.get("/admin/auth/user/add/")
    assert add_page.status_code == 200, add_page.content.decode()[:2000]
    assert NOT_AUTHORIZED not in add_page.content.decode()
    made = client.post(
        "/admin/auth/user/add/",
        {"username": "erin", "password1": "a long enough password", "password2": "a long enough password",
         "usable_password": "true"},
    )  # fmt: skip
    assert made.status_code == 302, made.content.decode()[:3000]
    erin = User.objects.get(username="erin")
    assert role_of(erin) == Role.READ and not erin.is_staff
    assert AuditEntry.objects.filter(action="admin.auth.user.add", actor="carol").exists()

    # The Repositories page, where an administrator restricts a repository to groups.
    team = Group.objects.create(name="team-a")
    vault = Repository.objects.create(url="https://example.org/acme/vault.git", name="acme/vault")
    assert client.get("/admin/indexing/repository/").status_code == 200
    url = f"/admin/indexing/repository/{vault.pk}/change/"
    data = form_data(client.get(url))
    data["visible_to_groups"] = [str(team.pk)]
    assert client.post(url, data).status_code == 302
    assert list(vault.visible_to_groups.values_list("name", flat=True)) == ["team-a"]
    entry = AuditEntry.objects.get(action="repository.visibility")
    assert entry.actor == "carol" and entry.details["to"] == ["team-a"]


def test_revoking_the_role_closes_the_admin_again() -> None:
    make_account("admin", username="ada")
    carol = make_account("read", username="carol")
    call_command("role", "grant", "carol", "admin")
    assert fresh(carol).is_staff
    call_command("role", "revoke", "carol")
    assert not fresh(carol).is_staff
    client = signed_in(fresh(carol))
    response = client.get("/admin/auth/user/add/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert 'href="/admin/"' not in client.get("/").content.decode()


def test_the_people_pages_role_form_sets_and_clears_staff_status() -> None:
    ada = make_account("admin", username="ada")
    dana = make_account("write", username="dana")
    client = signed_in(ada)
    client.post(f"/people/{dana.pk}/role", {"role": "admin"})
    assert role_of(fresh(dana)) == Role.ADMIN and fresh(dana).is_staff
    assert signed_in(fresh(dana)).get("/admin/auth/user/").status_code == 200
    client.post(f"/people/{dana.pk}/role", {"role": "write"})
    assert role_of(fresh(dana)) == Role.WRITE and not fresh(dana).is_staff


def test_groups_from_the_identity_provider_set_and_clear_staff_status() -> None:
    fay = make_account("read", username="fay")
    sync_groups(fay, ["reposearch-admin", "team-a"], "oidc")
    assert fresh(fay).is_staff
    assert signed_in(fresh(fay)).get("/admin/").status_code == 200
    sync_groups(fresh(fay), ["team-a"], "oidc")
    assert not fresh(fay).is_staff


def test_an_administrator_cannot_make_anyone_a_superuser_or_drop_an_administrators_staff() -> None:
    make_account("admin", username="ada")
    carol = make_account("admin", username="carol")
    dana = make_account("write", username="dana")
    client = signed_in(carol)
    for user in (carol, dana):  # their own record (another administrator's is view only)
        url = f"/admin/auth/user/{user.pk}/change/"
        page = client.get(url)
        assert page.status_code == 200
        assert 'name="is_superuser"' not in page.content.decode()
        data = form_data(page)
        data["groups"] = []  # what a browser sends: the box offers no role group
        data["is_superuser"] = "on"
        data.pop("is_staff", None)  # unticked
        assert client.post(url, data).status_code == 302
        assert not fresh(user).is_superuser
    assert fresh(carol).is_staff  # an administrator keeps it while the role lasts


def test_staff_who_are_not_administrators_see_only_what_their_permissions_allow() -> None:
    writer = make_account("write", username="wren")
    writer.is_staff = True
    writer.save()
    response = signed_in(writer).get("/admin/auth/user/")
    assert response.status_code == 403


def test_the_migration_makes_existing_administrators_staff() -> None:
    migration = __import__("accounts.migrations.0005_administrators_are_staff", fromlist=["x"])
    ada = make_account("admin", username="ada")
    reader = make_account("read", username="rory")
    User.objects.filter(pk=ada.pk).update(is_staff=False)  # as grant_role left it before
    root = User.objects.create_superuser("root", password="x-very-long-password")
    User.objects.filter(pk=root.pk).update(is_staff=False)

    editor = SimpleNamespace(connection=SimpleNamespace(alias="default"))  # what it reads
    migration.administrators_are_staff(apps, editor)
    assert fresh(ada).is_staff and fresh(root).is_staff and not fresh(reader).is_staff


def test_an_administrator_cannot_open_the_admin_to_django_permissions() -> None:
    """A group's Django permissions and a reader's 'Staff status' would let the reader change
    accounts after the administrator who set them lost the role; neither is theirs to set."""
    root = User.objects.create_superuser("root", password="x-very-long-password")
    carol = make_account("admin", username="carol")
    sock = make_account("read", username="sock")
    team = Group.objects.create(name="team-x")
    client = signed_in(carol)

    group_url = f"/admin/auth/group/{team.pk}/change/"
    page = client.get(group_url)
    assert page.status_code == 200 and 'name="permissions"' not in page.content.decode()
    change_user = Permission.objects.filter(codename__in=["change_user", "view_user"])
    posted = client.post(group_url, {"name": "team-x", "permissions": [p.pk for p in change_user]})
    assert posted.status_code == 302
    assert not team.permissions.exists()

    user_url = f"/admin/auth/user/{sock.pk}/change/"
    page = client.get(user_url)
    assert 'name="is_staff"' not in page.content.decode()
    data = form_data(page)
    data["groups"] = [str(team.pk)]
    data["is_staff"] = "on"
    assert client.post(user_url, data).status_code == 302
    assert not fresh(sock).is_staff and list(fresh(sock).groups.all()) == [team]

    # A superuser still sees a group's permissions and sets 'Staff status'.
    su = signed_in(root)
    assert 'name="permissions"' in su.get(group_url).content.decode()
    assert 'name="is_staff"' in su.get(user_url).content.decode()


def test_a_superuser_no_more_loses_staff_status_with_it() -> None:
    root = User.objects.create_superuser("root", password="x-very-long-password")
    sam = User.objects.create_superuser("sam", password="x-very-long-password")
    client = signed_in(root)
    url = f"/admin/auth/user/{sam.pk}/change/"
    data = form_data(client.get(url))
    assert data["is_staff"] == "on"  # the form posts it back as it was
    data.pop("is_superuser")  # unticked
    assert client.post(url, data).status_code == 302
    sam = fresh(sam)
    assert not sam.is_superuser and role_of(sam) == Role.READ
    assert not sam.is_staff
    response = signed_in(sam).get("/admin/auth/user/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]

    # One who holds the admin role as well stays an administrator, and staff.
    call_command("role", "grant", "sam", "admin")
    User.objects.filter(pk=sam.pk).update(is_superuser=True)
    data = form_data(client.get(url))
    data["groups"] = []  # what a browser sends: the box offers no role group
    data.pop("is_superuser")
    assert client.post(url, data).status_code == 302
    assert role_of(fresh(sam)) == Role.ADMIN and fresh(sam).is_staff
