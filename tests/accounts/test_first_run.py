"""The first start on an empty database writes the administrator's secrets to a 0600 file; later
starts leave it alone; the secrets never reach the command's output."""

from __future__ import annotations

import io
import stat

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_the_first_run_writes_initial_admin_txt_and_later_runs_leave_it(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("initial_admin", stdout=out)
    path = tmp_path / "initial-admin.txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == ["username", "password", "token"]
    values = dict(line.split(": ", 1) for line in lines)
    assert values["username"] == "admin"
    assert str(path) in out.getvalue()
    assert values["password"] not in out.getvalue() and values["token"] not in out.getvalue()

    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(values["password"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {values['token']}")
    assert client.get("/api/audit").status_code == 200  # an admin token

    before = path.read_text()
    call_command("initial_admin", stdout=io.StringIO())
    assert path.read_text() == before and User.objects.count() == 1


def test_nothing_is_created_when_accounts_exist(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    User.objects.create_user("someone")
    call_command("initial_admin", stdout=io.StringIO())
    assert not (tmp_path / "initial-admin.txt").exists()
    assert not User.objects.filter(username="admin").exists()


def test_the_first_run_names_the_people_page_and_the_role_commands(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from reposearch.embedded_stack import ready_lines

    settings.REPO_SEARCH_DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("initial_admin", stdout=out)
    printed = out.getvalue()
    assert "/people/" in printed and "manage.py users | role grant USER write|admin" in printed
    lines = ready_lines(settings, True)
    people = next(line for line in lines if line.startswith("people and roles:"))
    assert f":{settings.REPO_SEARCH_BIND_PORT}/people/" in people
    for command in ("users", "role grant", "role revoke", "visibility_group add", "createtoken"):
        assert f"manage.py {command}" in people or f"| {command}" in people, command
    assert "createsuperuser" not in people  # that makes administrators: named apart
    more = next(line for line in lines if line.startswith("more accounts:"))
    assert "/admin/auth/user/add/" in more and "(an administrator)" in more


@pytest.mark.parametrize(
    ("bind_host", "named"),
    [("0.0.0.0", True), ("[::]", True), ("127.0.0.1", False), ("[::1]", False), ("fe80::1", False)],
)
def test_the_ready_lines_name_other_machines_hosts_only_when_it_listens_on_every_address(  # type: ignore[no-untyped-def]
    settings, tmp_path, bind_host: str, named: bool
) -> None:
    from reposearch.embedded_stack import ready_lines

    settings.REPO_SEARCH_DATA_DIR = tmp_path
    settings.REPO_SEARCH_BIND_HOST = bind_host
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "search.example.org"]
    others = [line for line in ready_lines(settings, True) if line.startswith("other machines")]
    expected = ["other machines may use: search.example.org"] if named else []
    assert [line.split(" (")[0] for line in others] == expected
