"""``make up`` as a newcomer meets it: the URLs it prints, DEBUG off, static files, the first user.

The whole stack (``python -m reposearch.embedded_stack up``: its own PostgreSQL and Redis on free
ports, the worker, the web server) runs in a temporary data directory, with the environment a
user's shell would have: no ``DATABASE_URL``, no ``DEBUG``, only the ports.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import stat
import urllib.parse
import urllib.request
import uuid

import pytest

from reposearch.embedded_services import free_port
from tests.make_up_stack import SharedMakeUp, Stack, get, manage, user_environment


@pytest.fixture(scope="module")
def stack(shared_make_up: SharedMakeUp) -> Stack:
    """The ``make up`` shared with the restart tests (tests/reposearch/conftest.py)."""
    return shared_make_up.get()


def test_it_prints_the_urls_to_open_and_where_the_first_admin_is(stack: Stack) -> None:
    output = stack.output()
    for path in ("/", "/api/docs", "/admin/", "/api/health"):
        assert f"{stack.base}{path}" in output
    # The ready message (after initial_admin's own, which names the commands without the ports).
    ready = output[output.rindex("reposearch is ") :].splitlines()
    people = next(line for line in ready if "people and roles" in line)
    assert f"REPO_SEARCH_PG_PORT={stack.pg_port}" in people
    assert f"{stack.base}/people/" in people and "manage.py users" in people
    assert "role grant USER write|admin" in people
    more = next(line for line in ready if "more accounts" in line)
    assert "createsuperuser" in more and f"{stack.base}/admin/auth/user/add/" in more
    assert "initial-admin.txt" in next(line for line in output.splitlines() if "sign in" in line)
    assert get(f"{stack.base}/api/health")[0] == 200


def test_debug_is_off_so_a_missing_page_shows_no_internals(stack: Stack) -> None:
    for path in (f"/nope/{uuid.uuid4()}/", "/no-such-page/"):
        status, _type, body = get(f"{stack.base}{path}")
        assert status == 404, path
        for leak in ("URLconf", "Traceback", "DEBUG = True", "DATABASE_URL", "Django tried"):
            assert leak not in body, (path, leak)


def test_static_files_are_served_without_debug(stack: Stack) -> None:
    status, _type, page = get(f"{stack.base}/")
    assert status == 200
    assets = set(re.findall(r'(?:href|src)="(/static/[^"]+\.(?:css|js))"', page))
    assert any(a.endswith(".css") for a in assets) and any(a.endswith(".js") for a in assets)
    for asset in [*sorted(assets), "/static/admin/css/base.css"]:
        status, content_type, body = get(f"{stack.base}{asset}")
        assert status == 200, asset
        assert ("css" if asset.endswith(".css") else "javascript") in content_type, asset
        assert body.strip(), asset


def test_createsuperuser_with_the_same_port_makes_a_user_who_can_log_in(stack: Stack) -> None:
    env = dict(
        stack.env,
        DJANGO_SUPERUSER_PASSWORD="a-long-test-password-31",
        DJANGO_SUPERUSER_EMAIL="first@example.invalid",
    )
    result = manage(env, "createsuperuser", "--noinput", "--username", "first")
    assert result.returncode == 0, result.stderr

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, _type, form = get(f"{stack.base}/admin/login/", opener)
    assert status == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    data = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token.group(1),
            "username": "first",
            "password": "a-long-test-password-31",
            "next": "/admin/",
        }
    ).encode()
    request = urllib.request.Request(
        f"{stack.base}/admin/login/", data=data, headers={"Referer": f"{stack.base}/admin/login/"}
    )
    with opener.open(request, timeout=30) as response:
        page = response.read().decode(errors="replace")
        assert response.url.rstrip("/").endswith("/admin")
    assert "Log out" in page or "logout" in page


def test_a_command_that_cannot_reach_the_database_names_the_address() -> None:
    env = user_environment()
    closed = free_port()
    env["REPO_SEARCH_PG_PORT"] = str(closed)
    result = manage(env, "createsuperuser", "--noinput", "--username", "x")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot reach the database at postgresql://reposearch@127.0.0.1:{closed}/" in lines[0]
    assert "REPO_SEARCH_PG_PORT" in lines[0]


def test_a_command_run_with_another_data_directory_names_it(stack: Stack, tmp_path) -> None:
    env = dict(stack.env)  # make up's ports, but a data directory without its passwords
    env["REPO_SEARCH_DATA_DIR"] = str(tmp_path)
    result = manage(env, "users")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    address = f"postgresql://reposearch@127.0.0.1:{stack.pg_port}/"
    assert f"cannot reach the database at {address}" in lines[0]
    assert (
        f"no credentials.env (make up's passwords) in {tmp_path}: REPO_SEARCH_DATA_DIR must be"
        " the data directory make up uses"
    ) in lines[0]
    assert "is make up running" not in lines[0]


def test_the_first_start_generates_private_passwords_and_never_prints_them(stack: Stack) -> None:
    from reposearch import embedded_credentials

    data = stack.data
    path = embedded_credentials.path(data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    creds = embedded_credentials.read(data)
    assert creds is not None
    output = stack.output()
    assert str(path) in output  # where they are, not what they are
    for secret in (creds.pg_superuser_password, creds.pg_app_password, creds.redis_password):
        assert secret not in output


def call(stack: Stack, method: str, path: str, body: dict | None = None, token: str = "") -> int:
    """The status of one API call, with the README's headers."""
    return stack.call(method, path, body, token)[0]


def test_the_first_start_writes_the_admins_secrets_and_its_token_opens_the_api(
    stack: Stack,
) -> None:
    path = stack.data / "initial-admin.txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    values = stack.initial_admin()
    assert set(values) == {"username", "password", "token"} and values["username"] == "admin"
    output = stack.output()
    assert str(path) in output
    assert values["password"] not in output and values["token"] not in output

    # Without a token every endpoint is closed; with the file's token the README's calls work.
    assert call(stack, "GET", "/api/repos") == 401
    assert call(stack, "POST", "/api/search", {"query": "x"}) == 401
    assert call(stack, "GET", "/api/repos", token=values["token"]) == 200
    assert call(stack, "POST", "/api/search", {"query": "where"}, values["token"]) == 200

    # A read token made from it is refused writes.
    made = manage(stack.env, "createtoken", "admin", "reader", "--scope", "read")
    assert made.returncode == 0, made.stderr
    reader = made.stdout.strip()
    assert call(stack, "GET", "/api/repos", token=reader) == 200
    assert call(stack, "POST", "/api/repos", {"url": "https://example.org/a.git"}, reader) == 403


def test_the_data_directory_is_private_and_signed_with_a_key_of_its_own(stack: Stack) -> None:
    data = stack.data
    # Only the owner; as root, the embedded PostgreSQL's user passes through by its group.
    assert stat.S_IMODE(data.stat().st_mode) & 0o067 == 0
    for folder in (data / "run", data / "redis", data / "static"):
        assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0, folder
    # ... made so from the start: no process of the first start had anything to tighten
    assert "was readable by others" not in stack.output()
    key_file = data / "secret-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert len(key) >= 50 and not key.startswith("dev-only")
    assert key not in stack.output()
    shown = manage(
        stack.env, "shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip().splitlines()[-1] == key  # what the web server and workers sign with


def test_as_root_it_says_the_web_server_and_workers_run_as_root(stack: Stack) -> None:
    """make up as root cannot hand its processes to another user (docs/operators/deploy.md)."""
    warned = "warning: running as root, so the web server and the workers run as root" in (
        stack.output()
    )
    assert warned == (os.geteuid() == 0)
