"""``make up`` as a newcomer meets it: the URLs it prints, DEBUG off, static files, the first user.

The whole stack (``python -m reposearch.embedded_stack up``: its own PostgreSQL and Redis on free
ports, the worker, the web server) runs in a temporary data directory, with the environment a
user's shell would have: no ``DATABASE_URL``, no ``DEBUG``, only the ports.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reposearch.embedded_services import free_port

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "reposearch is ready"


@dataclass
class Stack:
    base: str
    env: dict[str, str]
    log: Path
    pg_port: int

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def user_environment(tmp: Path) -> tuple[dict[str, str], int]:
    """A shell's environment: the test run's servers and settings module left out."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "DEBUG")
        and not key.startswith(("REPO_SEARCH_", "LLM_", "PYTEST"))
    }
    pg_port = free_port()
    env.update(
        REPO_SEARCH_DATA_DIR=str(tmp / "data"),
        REPO_SEARCH_PG_PORT=str(pg_port),
        REPO_SEARCH_REDIS_PORT=str(free_port()),
        REPO_SEARCH_BIND_ADDR=f"127.0.0.1:{free_port()}",
        LLM_PROVIDER="none",
    )
    return env, pg_port


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("make-up")
    env, pg_port = user_environment(tmp)
    log = tmp / "make-up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "reposearch.embedded_stack", "up"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Stack(f"http://{env['REPO_SEARCH_BIND_ADDR']}", env, log, pg_port)
    try:
        deadline = time.monotonic() + 240
        while READY_LINE not in running.output():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make up did not get ready:\n{running.output()[-4000:]}")
            time.sleep(0.5)
        yield running
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def get(url: str, opener: urllib.request.OpenerDirector | None = None) -> tuple[int, str, str]:
    """(status, content type, body) of a GET."""
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=30) as response:
            body = response.read().decode(errors="replace")
            return response.status, response.headers.get("Content-Type", ""), body
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        return error.code, error.headers.get("Content-Type", ""), body


def test_it_prints_the_urls_to_open_and_where_the_first_admin_is(stack: Stack) -> None:
    output = stack.output()
    for path in ("/", "/api/docs", "/admin/", "/api/health"):
        assert f"{stack.base}{path}" in output
    create = next(line for line in output.splitlines() if "createsuperuser" in line)
    assert f"REPO_SEARCH_PG_PORT={stack.pg_port}" in create
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
    result = subprocess.run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", "first"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
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


def test_a_command_that_cannot_reach_the_database_names_the_address(tmp_path: Path) -> None:
    env, _ = user_environment(tmp_path)
    closed = free_port()
    env["REPO_SEARCH_PG_PORT"] = str(closed)
    result = subprocess.run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot reach the database at postgresql://reposearch@127.0.0.1:{closed}/" in lines[0]
    assert "REPO_SEARCH_PG_PORT" in lines[0]


def test_the_first_start_generates_private_passwords_and_never_prints_them(stack: Stack) -> None:
    from reposearch import embedded_credentials

    data = Path(stack.env["REPO_SEARCH_DATA_DIR"])
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
    import json

    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{stack.base}{path}", data=data, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_the_first_start_writes_the_admins_secrets_and_its_token_opens_the_api(
    stack: Stack,
) -> None:
    path = Path(stack.env["REPO_SEARCH_DATA_DIR"]) / "initial-admin.txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    values = dict(line.split(": ", 1) for line in path.read_text().splitlines())
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
    made = subprocess.run(
        [sys.executable, "manage.py", "createtoken", "admin", "reader", "--scope", "read"],
        cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    reader = made.stdout.strip()
    assert call(stack, "GET", "/api/repos", token=reader) == 200
    assert call(stack, "POST", "/api/repos", {"url": "https://example.org/a.git"}, reader) == 403
