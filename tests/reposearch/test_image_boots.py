"""The compose image boots: its files come from the Dockerfile, and compose's own commands start.

No Docker engine runs here, so ``tests/image_assembly.py`` builds the image's file system in a
scratch root from the Dockerfile's ``COPY`` lines (the build context filtered by
``.dockerignore``) and runs its ``RUN`` lines' ``pip install`` commands in a fresh virtualenv.
From that root, as an unprivileged user (the image's ``USER``), with the environment compose
gives its containers (the image's ``ENV``, a user's ``.env``, ``x-app-env`` interpolated), this
module runs docker-compose.yml's ``migrate`` command, ``manage.py check --deploy``, the web
server, the three workers and beat, each service's healthcheck, and indexes a repository from a
git server until a search finds it. Compose's ``db`` and ``redis`` are a database of its own on
the test run's PostgreSQL and a Redis of its own. What differs from a container: the web server
listens on 127.0.0.1 and a free port instead of 0.0.0.0:9000 (the web healthcheck is told that
port), and the container's ``/app``, ``/data`` and ``/tmp`` are folders of the scratch root.

The file set alone is checked, fast, in ``test_image_files.py``.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from django.db import connection

from reposearch.embedded_services import EmbeddedRedis, free_port
from tests import tiny_code
from tests.compose_env import compose_service_environment
from tests.image_assembly import Image, assemble, given_dockerfile
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.make_up_stack import wait_for

pytestmark = pytest.mark.timeout(1800)

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
FINISHED = {"done", "completed_with_errors", "failed", "cancelled"}


def _server_url(database: str) -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgresql://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT']}/{database}"
    )


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Container:
    """The assembled image with compose's environment, its processes and their logs."""

    image: Image
    env: dict[str, str]
    logs: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    web_port: int = 0

    def command(self, argv: list[str]) -> list[str]:
        return [self.image.map_paths(word) for word in argv]

    def run(
        self, argv: list[str], extra: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(argv), cwd=self.image.app, env={**self.env, **(extra or {})},
            capture_output=True, text=True, timeout=timeout, **self.image.process_user(),
        )  # fmt: skip

    def start(self, name: str, argv: list[str], extra: dict[str, str] | None = None) -> None:
        with (self.logs / f"{name}.log").open("ab") as out:
            self.processes[name] = subprocess.Popen(
                self.command(argv), cwd=self.image.app, env={**self.env, **(extra or {})},
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                **self.image.process_user(),
            )  # fmt: skip

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)

    def output(self, name: str | None = None) -> str:
        names = [name] if name else sorted(p.stem for p in self.logs.glob("*.log"))
        return "\n".join(
            f"--- {each}:\n" + (self.logs / f"{each}.log").read_text(errors="replace")[-3000:]
            for each in names
        )

    def admin(self) -> dict[str, str]:
        text = self.image.container_path("/data/initial-admin.txt").read_text()
        return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def web_command(port: int) -> list[str]:
    """Compose's web command, listening on 127.0.0.1:``port`` instead of 0.0.0.0:9000."""
    command = list(COMPOSE["services"]["web"]["command"])
    command[command.index("--host") + 1] = "127.0.0.1"
    command[command.index("--port") + 1] = str(port)
    return command


def healthcheck_command(service: str, web_port: int) -> list[str]:
    test = COMPOSE["services"][service]["healthcheck"]["test"]
    argv = list(test[1:]) if test[0] == "CMD" else ["sh", "-c", test[1]]
    if service == "web":  # it asks 127.0.0.1:9000 by default
        argv += ["--url", f"http://127.0.0.1:{web_port}/api/health"]
    return argv


def call(base: str, method: str, path: str, body: Any = None, token: str = "") -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return int(response.status), json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return int(error.code), json.loads(raw)
        except ValueError:
            return int(error.code), raw.decode(errors="replace")
    except OSError as error:
        return 0, str(error)


@contextlib.contextmanager
def scratch_database() -> Iterator[str]:
    name = f"image_boot_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_server_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(_server_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    """The image assembled and installed, compose's environment, its migrate run; nothing started.

    The scratch root is made outside pytest's temporary folder: the image's unprivileged user
    must reach it, and pytest keeps its own folder private."""
    scratch = Path(tempfile.mkdtemp(prefix="reposearch-image-"))
    logs = scratch / "logs"
    logs.mkdir()
    redis_home = scratch / "redis-server"
    redis_home.mkdir()
    redis = EmbeddedRedis(redis_home, free_port())
    try:
        started = time.monotonic()
        image = assemble(ROOT, scratch / "root", dockerfile=given_dockerfile())
        image.install(logs / "build.log")
        image.prepare_for_user()
        built = time.monotonic() - started
        redis.start()
        with scratch_database() as database:
            db = connection.settings_dict
            dotenv = {
                "SECRET_KEY": secrets.token_urlsafe(50),
                "ALLOWED_HOSTS": "search.example.com",
                # Compose's db and redis services take these; here the test's servers have theirs.
                "POSTGRES_PASSWORD": db.get("PASSWORD") or "trust-auth-ignores-it",
                "REDIS_PASSWORD": redis.password,
                "REPO_SEARCH_ALLOW_PRIVATE_HOSTS": "1",  # the test's git server is on 127.0.0.1
                "REPO_SEARCH_WORKER_CONCURRENCY": "1",  # four workers on two shared cores
                "LLM_PROVIDER": "none",  # no chat model server here
            }
            env = compose_service_environment(COMPOSE, "web", dotenv)
            for service in ("migrate", "worker-git", "worker-index", "worker-embed", "beat"):
                assert compose_service_environment(COMPOSE, service, dotenv) == env, service
            # Compose's host names of its db and redis services, pointed at the test's servers.
            assert env["DATABASE_URL"].endswith("@db:5432/reposearch"), env["DATABASE_URL"]
            env["DATABASE_URL"] = (
                env["DATABASE_URL"]
                .replace("reposearch:", f"{db['USER']}:", 1)
                .replace(
                    "@db:5432/reposearch", f"@{db['HOST'] or '127.0.0.1'}:{db['PORT']}/{database}"
                )
            )
            assert env["REDIS_URL"].endswith("@redis:6379/0"), env["REDIS_URL"]
            env["REDIS_URL"] = env["REDIS_URL"].replace("@redis:6379/", f"@127.0.0.1:{redis.port}/")
            box = Container(image, image.environment(env), logs, timings={"build": built})
            migrate = box.run(COMPOSE["services"]["migrate"]["command"], timeout=900)
            box.timings["migrate"] = time.monotonic() - started - built
            assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-5000:]
            try:
                yield box
            finally:
                for name in list(box.processes):
                    box.stop(name)
                user = "unprivileged" if image.unprivileged else "this test's user"
                sys.stderr.write(f"\nimage boot timings (s, processes as {user}): {box.timings}\n")
    finally:
        redis.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def services(container: Container) -> Iterator[str]:
    """Compose's web, workers and beat started from the image; yields the web's base URL."""
    started = time.monotonic()
    port = free_port()
    container.start("web", web_command(port))
    for service in ("worker-git", "worker-index", "worker-embed", "beat"):
        container.start(service, COMPOSE["services"][service]["command"])
    base = f"http://127.0.0.1:{port}"
    container.web_port = port

    def healthy() -> bool:
        for name, process in container.processes.items():
            assert process.poll() is None, f"{name} exited:\n{container.output(name)}"
        return call(base, "GET", "/api/health")[0] == 200

    wait_for(healthy, "/api/health = 200", 240, container.output)
    container.timings["start"] = time.monotonic() - started
    yield base


def test_migrate_ran_and_check_deploy_passes_with_secure_cookies(container: Container) -> None:
    assert container.admin()["username"]  # migrate's initial_admin wrote the first administrator
    check = container.run(["python", "manage.py", "check", "--deploy"])
    assert check.returncode == 0, check.stdout + check.stderr
    found = set(re.findall(r"\(security\.(W\d+)\)", check.stdout + check.stderr))
    # Left to the operator on purpose: HSTS (once https only) and the TLS proxy's redirect.
    assert found <= {"W004", "W008"}, check.stdout + check.stderr


def test_health_is_200_and_every_services_healthcheck_passes(
    container: Container, services: str
) -> None:
    status, health = call(services, "GET", "/api/health")
    assert status == 200, health
    beat_schedule = container.image.container_path("/tmp/celerybeat-schedule")
    wait_for(
        lambda: list(beat_schedule.parent.glob(beat_schedule.name + "*")),
        "beat writing its schedule",
        60,
        lambda: container.output("beat"),
    )
    checked = []
    for service, definition in COMPOSE["services"].items():
        if "build" not in definition or "healthcheck" not in definition:
            continue
        argv = healthcheck_command(service, container.web_port)
        result = container.run(argv, timeout=60)
        assert result.returncode == 0, (service, argv, result.stdout, result.stderr)
        checked.append(service)
    assert sorted(checked) == ["beat", "web", "worker-embed", "worker-git", "worker-index"]


def test_a_repository_is_indexed_and_found(
    container: Container, services: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    token = container.admin()["token"]
    repo = init_bare_repo(str(tmp_path / "tiny.git"))
    commit_files(repo, {"net/retry.py": tiny_code.RETRY, "app/settings.py": tiny_code.SETTINGS})
    with GitHttpServer({"team/tiny.git": repo}) as git:
        status, created = call(
            services, "POST", "/api/repos", {"url": git.url("team/tiny.git")}, token
        )
        assert status == 202, created  # accepted: indexing runs on the workers
        job_id = created["job"]["id"]

        def finished() -> dict[str, Any] | None:
            status, job = call(services, "GET", f"/api/jobs/{job_id}", token=token)
            return job if status == 200 and job["state"] in FINISHED else None

        job = wait_for(finished, "the indexing job finishing", 300, container.output)
    assert job is not None and job["state"] == "done", job
    status, found = call(
        services, "POST", "/api/search", {"query": "retry a flaky call with backoff"}, token
    )
    assert status == 200, found
    assert found["results"], found
    assert found["results"][0]["file_path"] == "net/retry.py", found["results"][0]
    assert found["total_vector_hits"] > 0  # the embedding model shipped in the image answered
    container.timings["index"] = time.monotonic() - started


def _sign_in(base: str, username: str, password: str) -> tuple[int, list[str], int]:
    """A browser's sign-in over plain http: (status of the POST, the Set-Cookie headers of the
    sign-in page, status of ``/`` afterwards). The cookie jar keeps ``Secure`` cookies away
    from http pages, as browsers do."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirects)

    def send(request: urllib.request.Request) -> tuple[int, str, list[str]]:
        try:
            with opener.open(request, timeout=60) as response:
                return (
                    response.status,
                    response.read().decode(),
                    response.headers.get_all("Set-Cookie") or [],
                )
        except urllib.error.HTTPError as error:
            return (
                error.code,
                error.read().decode(errors="replace"),
                error.headers.get_all("Set-Cookie") or [],
            )

    status, page, cookies = send(urllib.request.Request(f"{base}/sign-in"))
    assert status == 200, page[:2000]
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match, page[:2000]
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": match.group(1)}
    ).encode()
    posted = urllib.request.Request(
        f"{base}/sign-in", data=form, method="POST", headers={"Origin": base}
    )
    sign_in_status, _, _ = send(posted)
    home_status, _, _ = send(urllib.request.Request(f"{base}/"))
    return sign_in_status, cookies, home_status


def test_sign_in_over_plain_http_works_with_the_switch_and_cookies_are_secure_without(
    container: Container, services: str
) -> None:
    admin = container.admin()
    refused, cookies, home = _sign_in(services, admin["username"], admin["password"])
    assert any(c.startswith("csrftoken=") and "; Secure" in c for c in cookies), cookies
    assert refused == 403 and home == 302  # the browser never sent the Secure CSRF cookie back

    switch = {"REPO_SEARCH_PLAIN_HTTP": "1"}
    port = free_port()
    container.start("web-plain-http", web_command(port), switch)
    base = f"http://127.0.0.1:{port}"
    wait_for(
        lambda: call(base, "GET", "/api/health")[0] == 200,
        "the plain-http web server answering",
        120,
        lambda: container.output("web-plain-http"),
    )
    try:
        signed_in, cookies, home = _sign_in(base, admin["username"], admin["password"])
    finally:
        container.stop("web-plain-http")
    assert not any("; Secure" in c for c in cookies), cookies
    assert signed_in == 302 and home == 200
    # ... and check --deploy says the cookies are not secure.
    check = container.run(["python", "manage.py", "check", "--deploy"], switch)
    found = set(re.findall(r"\(security\.(W\d+)\)", check.stdout + check.stderr))
    assert {"W012", "W016"} <= found, check.stdout + check.stderr
