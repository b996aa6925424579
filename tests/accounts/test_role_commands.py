"""People managed from the server's shell: the role groups exist from the migrations, and
``manage.py users``, ``role``, ``visibility_group``, ``createtoken`` and ``revoketoken`` change
what an account may do and see, each change audited with the command that made it."""

from __future__ import annotations

import importlib
import io

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEntry
from accounts.roles import ROLE_GROUPS, Role, role_of
from accounts.tokens import token_for_secret
from accounts.visibility import viewer_for
from indexing.models import Repository
from indexing.visible import visible_repositories
from tests.accounts_support import make_account, token_for

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def test_the_role_groups_exist_from_the_migrations_and_making_them_again_keeps_members() -> None:
    assert set(Group.objects.filter(name__in=list(ROLE_GROUPS)).values_list("name", flat=True)) == {
        "reposearch-write",
        "reposearch-admin",
    }
    writer = make_account("write")
    migration = importlib.import_module("accounts.migrations.0003_role_groups")
    with connection.schema_editor() as editor:
        migration.create_role_groups(apps, editor)
        migration.create_role_groups(apps, editor)
    assert Group.objects.filter(name__in=list(ROLE_GROUPS)).count() == 2
    assert role_of(fresh(writer)) == Role.WRITE


def test_users_lists_role_groups_active_flag_and_usable_tokens() -> None:
    admin = User.objects.create_superuser("root", password="x-very-long-password")
    dana = make_account("write", username="dana", groups=["team-a", "team-b"])
    token_for(dana, name="ci")
    token_for(dana, name="old")
    ApiToken.objects.filter(name="old").update(revoked_at=timezone.now())
    robin = make_account("read", username="robin")
    robin.is_active = False
    robin.save()
    lines = {line.split()[0]: line.split() for line in run("users").splitlines()}
    assert lines["USER"] == ["USER", "ROLE", "ACTIVE", "TOKENS", "GROUPS"]
    assert lines["dana"] == ["dana", "write", "yes", "1", "team-a,", "team-b"]
    assert lines["robin"] == ["robin", "read", "no", "0", "-"]
    assert lines[admin.username][1:3] == ["admin", "(superuser)"]


def test_role_grant_and_revoke_change_what_the_account_and_its_tokens_may_do() -> None:
    dana = make_account("read", username="dana")
    assert run("role", "grant", "dana", "write").strip() == "dana: read -> write"
    secret = token_for(fresh(dana), scope="write")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.post("/api/repos/nope/reindex").status_code == 404  # write: allowed to try
    entry = AuditEntry.objects.get(action="account.role")
    assert entry.target == "dana" and entry.actor == ""
    assert entry.details["from"] == "read" and entry.details["to"] == "write"
    assert entry.details["via"] == "manage.py role grant"

    assert run("role", "grant", "dana", "write").strip() == "dana is write already"
    assert AuditEntry.objects.filter(action="account.role").count() == 1  # no change, no row
    assert run("role", "revoke", "dana").strip() == "dana: write -> read"
    assert role_of(fresh(dana)) == Role.READ
    assert client.post("/api/repos/nope/reindex").status_code == 403  # its token is read now
    assert run("role", "grant", "dana", "admin").strip() == "dana: read -> admin"
    assert fresh(dana).groups.filter(name="reposearch-admin").exists()


def test_a_role_is_granted_even_if_someone_deleted_its_group() -> None:
    Group.objects.filter(name="reposearch-write").delete()
    make_account("read", username="dana")
    run("role", "grant", "dana", "write")
    assert role_of(User.objects.get(username="dana")) == Role.WRITE


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["role", "grant", "nobody", "write"], "no account named 'nobody'$"),
        (["role", "grant", "Dan", "write"], "no account named 'Dan' — did you mean dana, ada\\?"),
        (["role", "grant", "dana", "owner"], "invalid choice: 'owner'"),
        (["role", "revoke", "root"], "root is a superuser"),
        (["role", "revoke", "ada"], "ada is the last active administrator"),
    ],
)
def test_role_refuses_clearly_and_changes_nothing(args: list[str], message: str) -> None:
    make_account("read", username="dana")
    make_account("admin", username="ada")
    root = User.objects.create_superuser("root", password="x-very-long-password")
    root.is_active = False  # an inactive superuser is no administrator to fall back on
    root.save()
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not AuditEntry.objects.filter(action="account.role", outcome="ok").exists()
    assert role_of(User.objects.get(username="ada")) == Role.ADMIN


def test_a_refused_role_change_is_recorded_with_its_reason() -> None:
    make_account("admin", username="ada")
    with pytest.raises(CommandError, match="ada is the last active administrator"):
        run("role", "revoke", "ada")
    entry = AuditEntry.objects.get(action="account.role")
    assert (entry.actor, entry.target, entry.outcome) == ("", "ada", "refused")
    assert entry.details["from"] == "admin" and entry.details["to"] == "read"
    assert entry.details["error"] == "last_admin"
    assert entry.details["message"].startswith("ada is the last active administrator")
    assert entry.details["via"] == "manage.py role revoke"
    assert role_of(User.objects.get(username="ada")) == Role.ADMIN


def test_an_administrator_may_be_demoted_while_another_remains() -> None:
    make_account("admin", username="ada")
    User.objects.create_superuser("root", password="x-very-long-password")
    assert run("role", "revoke", "ada").strip() == "ada: admin -> read"


def test_visibility_groups_are_created_filled_listed_and_emptied() -> None:
    dana = make_account("read", username="dana")
    make_account("read", username="erin")
    vault = Repository.objects.create(url="https://example.org/acme/vault.git", name="acme/vault")
    assert (
        run("visibility_group", "create", "team-a").strip()
        == "created the visibility group 'team-a'"
    )
    vault.visible_to_groups.set([Group.objects.get(name="team-a")])
    assert not visible_repositories(viewer_for(fresh(dana))).filter(pk=vault.pk).exists()

    out = run("visibility_group", "add", "team-a", "dana", "erin")
    assert out.splitlines() == ["dana added to team-a", "erin added to team-a"]
    assert visible_repositories(viewer_for(fresh(dana))).filter(pk=vault.pk).exists()
    assert run("visibility_group", "add", "team-a", "dana").strip() == "dana already in team-a"
    listed = run("visibility_group", "list")
    assert "team-a: 2 member(s), restricts 1 repository - dana, erin" in listed
    assert "reposearch-" not in listed  # role groups are not visibility groups

    assert run("visibility_group", "remove", "team-a", "dana").strip() == "dana removed from team-a"
    assert not visible_repositories(viewer_for(fresh(dana))).filter(pk=vault.pk).exists()
    actions = list(AuditEntry.objects.order_by("id").values_list("action", "target", "details"))
    assert [(a, t, d.get("user")) for a, t, d in actions] == [
        ("group.create", "team-a", None),
        ("group.add_member", "team-a", "dana"),
        ("group.add_member", "team-a", "erin"),
        ("group.remove_member", "team-a", "dana"),
    ]
    assert all(d["via"].startswith("manage.py visibility_group") for _a, _t, d in actions)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "team-z", "dana"], "no group named 'team-z'; create it first"),
        (["add", "reposearch-admin", "dana"], "reposearch-admin is a role group"),
        (["remove", "reposearch-write", "dana"], "role group"),
        (["create", "reposearch-write"], "role group"),
        (["create", "Reposearch-read"], "kept for reposearch's own groups"),
        (["create", "team-a"], "a group named 'team-a' exists already"),
        (["create", "  "], "give the group a name"),
        (["add", "team-a", "nobody"], "no account named 'nobody'"),
    ],
)
def test_visibility_group_refuses_clearly(args: list[str], message: str) -> None:
    Group.objects.create(name="team-a")
    make_account("read", username="dana")
    with pytest.raises(CommandError, match=message):
        run("visibility_group", *args)
    assert not AuditEntry.objects.exists()
    assert role_of(User.objects.get(username="dana")) == Role.READ


def test_the_list_says_when_there_are_no_groups() -> None:
    assert "no visibility groups" in run("visibility_group", "list")


def test_createtoken_for_another_account_is_recorded_as_the_commands_doing() -> None:
    make_account("write", username="deploy")
    secret = run("createtoken", "deploy", "ci", "--scope", "write").strip()
    token = token_for_secret(secret)
    assert token is not None and token.user.username == "deploy" and token.scope == "write"
    entry = AuditEntry.objects.get(action="token.create")
    assert entry.actor == "" and entry.details["owner"] == "deploy"
    assert entry.details["via"] == "manage.py createtoken"


def test_revoketoken_by_name_by_id_and_all_stops_the_secrets_at_once() -> None:
    dana = make_account("write", username="dana")
    first, second, third = (token_for(dana, name=name) for name in ("ci", "laptop", "editor"))
    listing = run_error("revoketoken", "dana")
    assert "name the token to revoke" in listing and "ci" in listing and "laptop" in listing
    assert token_for_secret(first) is not None

    assert "revoked 'ci'" in run("revoketoken", "dana", "ci")
    assert token_for_secret(first) is None and token_for_secret(second) is not None
    laptop = ApiToken.objects.get(name="laptop")
    assert f"(id {laptop.pk})" in run("revoketoken", "dana", str(laptop.pk))
    assert token_for_secret(second) is None
    assert "revoked 'editor'" in run("revoketoken", "dana", "--all")
    assert token_for_secret(third) is None
    assert run("revoketoken", "dana", "--all").strip() == "dana has no unrevoked token"
    revokes = AuditEntry.objects.filter(action="token.revoke")
    assert sorted(entry.details["name"] for entry in revokes) == ["ci", "editor", "laptop"]
    assert {entry.details["owner"] for entry in revokes} == {"dana"}


def run_error(*args: str) -> str:
    with pytest.raises(CommandError) as raised:
        run(*args)
    return str(raised.value)


def test_revoketoken_refuses_an_unknown_or_ambiguous_token() -> None:
    dana = make_account("read", username="dana")
    token_for(dana, name="ci")
    token_for(dana, name="ci")
    assert "2 tokens named 'ci'" in run_error("revoketoken", "dana", "ci")
    assert "no unrevoked token 'nope'" in run_error("revoketoken", "dana", "nope")
    assert "no account named 'nobody'" in run_error("revoketoken", "nobody", "ci")
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 2
