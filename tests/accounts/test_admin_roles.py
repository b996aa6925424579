"""Roles and visibility in Django's admin: the user form shows and sets the reposearch role (with
the People page's rules), lists visibility groups only, hides the per-user permissions that
reposearch does not use; role groups and groups that restrict repositories cannot be deleted;
only administrators change a repository's visibility there, and the change is audited."""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from accounts.models import AuditEntry
from accounts.roles import Role, role_of
from indexing.models import Repository
from tests.accounts_support import make_account

pytestmark = pytest.mark.django_db


def superuser_client(username: str = "root") -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser(username, password="x-very-long-password"))
    return client


def staff_client(role: str, *permissions: str) -> Client:
    user = make_account(role)
    user.is_staff = True
    user.save()
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


def form_data(response: Any) -> dict[str, Any]:
    """What the admin's change page would post back unchanged (its form and inlines)."""
    data: dict[str, Any] = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        data.update({management.add_prefix(k): v for k, v in management.initial.items()})
        forms += list(formset.forms)
    for form in forms:
        for name, field in form.fields.items():
            if field.disabled:
                continue
            key, value = form.add_prefix(name), form[name].value()
            if isinstance(value, datetime):
                data[f"{key}_0"], data[f"{key}_1"] = (
                    value.date().isoformat(),
                    value.time().isoformat(),
                )
            elif isinstance(value, bool):
                if value:
                    data[key] = "on"
            elif isinstance(value, list | tuple):
                data[key] = [str(item.pk if hasattr(item, "pk") else item) for item in value]
            elif value is not None:
                data[key] = str(value)
    return data


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def test_the_user_form_shows_the_role_and_visibility_groups_but_no_user_permissions() -> None:
    Group.objects.create(name="team-a")
    dana = make_account("write", username="dana", groups=["team-a"])
    html = superuser_client().get(f"/admin/auth/user/{dana.pk}/change/").content.decode()
    assert 'name="role"' in html and '<option value="write" selected>' in html
    assert 'name="user_permissions"' not in html
    assert "per-model permissions are not used by reposearch" in html
    assert ">team-a</option>" in html and ">reposearch-write</option>" not in html
    listing = superuser_client("root2").get("/admin/auth/user/").content.decode()
    assert '<td class="field-role">write</td>' in listing


def test_an_administrator_sets_the_role_in_the_admin_and_the_groups_are_kept() -> None:
    Group.objects.create(name="team-a")
    dana = make_account("read", username="dana", groups=["team-a"])
    client = superuser_client()
    page = client.get(f"/admin/auth/user/{dana.pk}/change/")
    data = form_data(page)
    data["role"] = "write"
    response = client.post(f"/admin/auth/user/{dana.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert role_of(fresh(dana)) == Role.WRITE
    assert set(fresh(dana).groups.values_list("name", flat=True)) == {"team-a", "reposearch-write"}
    entry = AuditEntry.objects.get(action="account.role")
    assert (entry.actor, entry.target, entry.details["via"]) == ("root", "dana", "admin")
    # Saving the form again without touching the role keeps it (the groups box omits it).
    client.post(
        f"/admin/auth/user/{dana.pk}/change/", form_data(client.get(page.request["PATH_INFO"]))
    )
    assert role_of(fresh(dana)) == Role.WRITE
    assert AuditEntry.objects.filter(action="account.role").count() == 1


def test_the_admin_form_refuses_to_demote_the_last_administrator() -> None:
    ada = make_account("admin", username="ada")
    client = Client()
    ada.is_staff = True
    ada.save()
    ada.user_permissions.add(*Permission.objects.filter(codename__in=["change_user", "view_user"]))
    client.force_login(ada)
    data = form_data(client.get(f"/admin/auth/user/{ada.pk}/change/"))
    data["role"] = "read"
    response = client.post(f"/admin/auth/user/{ada.pk}/change/", data)
    assert response.status_code == 200  # the form again, with the reason
    assert "you cannot lower your own role" in response.content.decode()
    assert role_of(fresh(ada)) == Role.ADMIN
    entry = AuditEntry.objects.get(action="account.role")  # the refusal is on record
    assert (entry.actor, entry.target, entry.outcome) == ("ada", "ada", "refused")
    assert entry.details["error"] == "own_role" and entry.details["via"] == "admin"


def test_staff_who_are_not_administrators_cannot_give_roles() -> None:
    dana = make_account("read", username="dana")
    client = staff_client("write", "change_user", "view_user")
    page = client.get(f"/admin/auth/user/{dana.pk}/change/")
    assert page.context["adminform"].form.fields["role"].disabled
    data = form_data(page)
    data["role"] = "admin"
    client.post(f"/admin/auth/user/{dana.pk}/change/", data)
    assert role_of(fresh(dana)) == Role.READ


def test_role_groups_and_groups_restricting_repositories_cannot_be_deleted() -> None:
    client = superuser_client()
    writers = Group.objects.get(name="reposearch-write")
    team = Group.objects.create(name="team-a")
    spare = Group.objects.create(name="spare")
    vault = Repository.objects.create(url="https://example.org/acme/vault.git", name="acme/vault")
    vault.visible_to_groups.set([team])
    role_refused = client.get(f"/admin/auth/group/{writers.pk}/delete/")
    assert role_refused.status_code == 403
    said = html.unescape(role_refused.content.decode())
    assert "reposearch-write grants the write role, so it cannot be deleted or renamed" in said
    assert "People page (/people/)" in said and "'manage.py role revoke USER'" in said
    team_refused = client.post(f"/admin/auth/group/{team.pk}/delete/", {"post": "yes"})
    assert team_refused.status_code == 403
    said = html.unescape(team_refused.content.decode())
    assert "team-a restricts 1 repository (acme/vault): deleting it would let every" in said
    assert "(/admin/indexing/repository/)" in said and "PATCH /api/repos/{id}" in said
    assert Group.objects.filter(pk__in=[writers.pk, team.pk]).count() == 2
    assert client.post(f"/admin/auth/group/{spare.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Group.objects.filter(pk=spare.pk).exists()
    change = client.get(f"/admin/auth/group/{writers.pk}/change/").content.decode()
    assert 'name="name"' not in change  # the name is what grants the role


def test_only_administrators_change_a_repositorys_visibility_in_the_admin() -> None:
    team = Group.objects.create(name="team-a")
    vault = Repository.objects.create(url="https://example.org/acme/vault.git", name="acme/vault")
    vault.visible_to_groups.set([team])
    url = f"/admin/indexing/repository/{vault.pk}/change/"

    writer = staff_client("write", "change_repository", "view_repository")
    page = writer.get(url)
    assert page.status_code == 200 and 'name="visible_to_groups"' not in page.content.decode()
    data = form_data(page)
    data["visible_to_groups"] = []
    data["name"] = "acme/vault-renamed"
    assert writer.post(url, data).status_code == 302
    assert list(vault.visible_to_groups.values_list("name", flat=True)) == ["team-a"]
    assert not AuditEntry.objects.filter(action="repository.visibility").exists()

    admin = superuser_client()
    data = form_data(admin.get(url))
    assert data["visible_to_groups"] == [str(team.pk)]
    data["visible_to_groups"] = []
    assert admin.post(url, data).status_code == 302
    assert not vault.visible_to_groups.exists()
    entry = AuditEntry.objects.get(action="repository.visibility")
    assert entry.actor == "root" and entry.target == str(vault.pk)
    assert entry.details["from"] == ["team-a"] and entry.details["to"] == []
    assert entry.details["via"] == "admin"


def test_a_refused_group_deletion_names_restricted_repositories_to_administrators_only() -> None:
    team = Group.objects.create(name="team-secret")
    vault = Repository.objects.create(url="https://example.org/acme/top.git", name="acme/topsecret")
    vault.visible_to_groups.set([team])
    url = f"/admin/auth/group/{team.pk}/delete/"

    staff = staff_client("write", "delete_group", "view_group")
    refused = staff.get(url)
    assert refused.status_code == 403
    said = html.unescape(refused.content.decode())
    assert "team-secret restricts 1 repository: deleting it would let every account see it" in said
    assert "acme/topsecret" not in said

    administrator = Client()
    administrator.force_login(make_account("admin", username="carol"))
    said = html.unescape(administrator.get(url).content.decode())
    assert "team-secret restricts 1 repository (acme/topsecret)" in said


def test_a_role_change_refused_at_the_save_is_shown_and_recorded(monkeypatch: Any) -> None:
    """What the form checks can change before the form is saved; set_role checks again, under
    its lock, in the admin's transaction. Its refusal used to be a 500 whose audit row the
    transaction's rollback took with it."""
    import accounts.admin_users

    make_account("admin", username="ada")
    carol = make_account("admin", username="carol")
    client = Client()
    client.force_login(carol)
    url = f"/admin/auth/user/{carol.pk}/change/"
    data = form_data(client.get(url))
    data["groups"] = []
    data["role"] = "read"
    data["email"] = "carol@example.org"
    # As if the form's check ran before the state it checks changed: it lets the change through.
    monkeypatch.setattr(accounts.admin_users, "check_role_change", lambda *args: None)
    client.raise_request_exception = False
    response = client.post(url, data)
    assert response.status_code == 200  # the form again, with the reason
    assert "you cannot lower your own role" in html.unescape(response.content.decode())
    carol = fresh(carol)
    assert role_of(carol) == Role.ADMIN and carol.email == ""  # nothing of the form was saved
    entry = AuditEntry.objects.get(action="account.role")
    assert (entry.actor, entry.target, entry.outcome) == ("carol", "carol", "refused")
    assert entry.details["error"] == "own_role" and entry.details["to"] == "read"
    assert not AuditEntry.objects.filter(action="admin.auth.user.change").exists()
