"""docker-compose.yml cannot run here (no Docker engine), so its shape is checked against the code."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
ENV_MODULE = "".join(path.read_text() for path in (ROOT / "reposearch" / "settings").glob("*.py"))


APP_SERVICES = ("migrate", "web", "worker-git", "worker-index", "worker-embed", "beat")


def test_services_exist_with_images_or_builds() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"db", "db-replica", "redis", *APP_SERVICES}
    assert "pgvector" in services["db"]["image"]
    assert services["db-replica"]["image"] == services["db"]["image"]
    assert services["redis"]["image"].startswith("redis")
    for name in APP_SERVICES:
        assert services[name]["build"] == "."
    assert (ROOT / "Dockerfile").exists()


def test_the_read_replica_is_optional_and_follows_the_primary() -> None:
    """``docker compose up`` starts no replica; the ``replicas`` profile starts one that copies
    the primary once (pg_basebackup -R: then it streams its WAL), with the feedback that keeps
    the primary's cleanup from cancelling its searches; the primary's first start lets it in."""
    replica = COMPOSE["services"]["db-replica"]
    assert replica["profiles"] == ["replicas"]
    command = replica["command"][2]
    assert "pg_basebackup -h db -U reposearch" in command and " -R " in command
    assert 'if [ ! -s "$$PGDATA/PG_VERSION" ]' in command  # copied once, not at every start
    assert command.endswith("exec gosu postgres postgres -c hot_standby_feedback=on")
    assert replica["environment"]["PGPASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert replica["volumes"] == ["replicadata:/var/lib/postgresql/data"]
    [mount] = COMPOSE["services"]["db"]["configs"]
    assert mount["target"].startswith("/docker-entrypoint-initdb.d/")
    rule = COMPOSE["configs"][mount["source"]]["content"]
    assert 'echo "host replication all all scram-sha-256" >> "$$PGDATA/pg_hba.conf"' in rule


def test_the_application_never_runs_as_root() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")
    for name in APP_SERVICES:
        service = COMPOSE["services"][name]
        assert str(service.get("user", users[-1])).split(":")[0] not in ("root", "0"), name
        assert "no-new-privileges:true" in service["security_opt"], name


def test_git_index_and_embed_queues_have_workers_of_their_own() -> None:
    """A new repository's clone and full text never wait behind other repositories' embedding."""
    consumers: dict[str, list[str]] = {}
    for name, service in COMPOSE["services"].items():
        command = service.get("command") or []
        if "worker" in command:
            for queue in command[command.index("-Q") + 1].split(","):
                consumers.setdefault(queue, []).append(name)
    assert consumers == {
        "git": ["worker-git"],
        "index": ["worker-index"],
        "default": ["worker-index"],
        "embed": ["worker-embed"],
    }


def test_workers_together_consume_every_queue() -> None:
    queues: set[str] = set()
    for service in COMPOSE["services"].values():
        command = service.get("command") or []
        if "worker" in command:
            queues |= set(command[command.index("-Q") + 1].split(","))
    assert queues == set(settings.CELERY_TASK_QUEUES_NAMES)


def test_commands_point_at_real_modules() -> None:
    web = COMPOSE["services"]["web"]["command"]
    module, _, attribute = web[1].partition(":")
    assert (ROOT / (module.replace(".", "/") + ".py")).exists()
    assert attribute == "application"
    assert (ROOT / "reposearch" / "celery.py").exists()


def test_every_environment_name_is_one_the_settings_read() -> None:
    env = COMPOSE["x-app-env"]
    read = set(re.findall(r'env\.\w+\(\s*"([A-Z_]+)"', ENV_MODULE))
    read |= set(
        re.findall(r'"([A-Z_]+)"', (ROOT / "reposearch/settings/production.py").read_text())
    )
    read.add("DJANGO_SETTINGS_MODULE")
    unknown = set(env) - read
    assert not unknown, f"compose sets variables the settings never read: {unknown}"
    assert env["DJANGO_SETTINGS_MODULE"] == "reposearch.settings.production"


def test_commands_are_the_ones_processes_py_builds() -> None:
    from reposearch.processes import compose_commands

    for service, command in compose_commands().items():
        assert COMPOSE["services"][service]["command"] == command, service
    assert set(compose_commands()) == set(APP_SERVICES) - {"migrate"}


def test_dockerfile_default_command_is_the_web_command() -> None:
    import json

    from reposearch.processes import web_command

    cmd = next(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD")
    )
    assert json.loads(cmd.removeprefix("CMD").strip()) == web_command("0.0.0.0", 9000, 2)


def _read_names() -> set[str]:
    text = ENV_MODULE + (ROOT / "reposearch/settings/production.py").read_text()
    return set(re.findall(r'env\.\w+\(\s*"([A-Z_]+)"', text))


def test_the_file_validates_against_the_compose_specification() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(ROOT / "docker-compose.yml")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_setting_reaches_the_containers_through_env_example() -> None:
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    missing = _read_names() - listed
    assert not missing, f".env.example does not list {sorted(missing)}"
    compose_only = {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "REPO_SEARCH_PORT"}
    unknown = listed - _read_names() - compose_only
    assert not unknown, f".env.example lists variables nothing reads: {sorted(unknown)}"
    for name in APP_SERVICES:
        service = COMPOSE["services"][name]
        assert service["env_file"] == [{"path": ".env", "required": False}], name


def test_services_restart_and_report_their_health() -> None:
    for name, service in COMPOSE["services"].items():
        if name == "migrate":
            assert service["restart"] == "no"  # it runs once, before the others start
            continue
        assert service["restart"] == "unless-stopped", name
        assert "healthcheck" in service, name
    web = COMPOSE["services"]["web"]["healthcheck"]["test"]
    assert web[1:4] == ["python", "-m", "reposearch.healthcheck"]
    assert "--appendonly yes" in " ".join(COMPOSE["services"]["redis"]["command"])
    for name in APP_SERVICES:
        assert "host.docker.internal:host-gateway" in COMPOSE["services"][name]["extra_hosts"]


def test_redis_and_postgres_take_passwords_that_stay_off_the_command_line() -> None:
    redis = COMPOSE["services"]["redis"]
    command = " ".join(redis["command"])
    assert "requirepass %s" in command and "$$REDIS_PASSWORD" in command
    assert "--requirepass" not in command  # `ps` on the docker host would show it
    assert command.endswith("--appendonly yes --appendfsync everysec")
    assert redis["environment"]["REDISCLI_AUTH"] == redis["environment"]["REDIS_PASSWORD"]
    assert redis["environment"]["REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
    env = COMPOSE["x-app-env"]
    assert env["REDIS_URL"].startswith("redis://:${REDIS_PASSWORD:?")
    assert env["DATABASE_URL"].startswith("postgresql://reposearch:${POSTGRES_PASSWORD:?")
    assert COMPOSE["services"]["db"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )


def test_every_command_and_healthcheck_is_one_the_code_has() -> None:
    """Each program a service runs exists in the image, with arguments the code accepts; each
    worker's healthcheck pings the node name its command gives. (test_image_boots.py runs them.)"""
    from django.core.management import get_commands

    from reposearch.healthcheck import main as healthcheck  # noqa: F401 - the module exists

    services = COMPOSE["services"]
    migrate = services["migrate"]["command"]
    assert migrate[:2] == ["sh", "-c"]
    assert migrate[2].startswith("python manage.py check --deploy && ")  # warnings in its log
    for step in migrate[2].split(" && "):
        program, script, name, *_ = step.split()
        assert (program, script) == ("python", "manage.py"), step
        assert name in get_commands(), f"migrate runs manage.py {name}, which does not exist"
    for name in APP_SERVICES:
        command = services[name]["command"]
        if command[0] == "celery":
            assert command[1:3] == ["-A", "reposearch"] and command[3] in ("worker", "beat")
        test = services[name].get("healthcheck", {}).get("test", [])
        if "worker" in command:
            node = command[command.index("-n") + 1]
            assert test[:5] == ["CMD", "python", "-m", "reposearch.healthcheck", "worker"], name
            assert test[test.index("--prefix") + 1] == node.split("@")[0], name
            assert node.endswith("@%h"), name  # the healthcheck asks <prefix>@<this host>
    assert (ROOT / "reposearch" / "healthcheck.py").is_file()
    beat = services["beat"]
    schedule = beat["command"][beat["command"].index("-s") + 1]
    assert (
        schedule.startswith("/tmp/")
        and "/tmp/celerybeat-schedule" in beat["healthcheck"]["test"][-1]
    )


def test_the_web_healthcheck_is_a_host_the_settings_allow() -> None:
    """It asks http://127.0.0.1:9000/api/health: 127.0.0.1 stays allowed whatever .env's
    ALLOWED_HOSTS says (else Django answers 400 and the service is never healthy)."""
    from tests.compose_env import interpolate

    value = COMPOSE["x-app-env"]["ALLOWED_HOSTS"]
    assert "127.0.0.1" in interpolate(value, {"ALLOWED_HOSTS": "search.example.com"}).split(",")
    assert "search.example.com" in interpolate(value, {"ALLOWED_HOSTS": "search.example.com"})
    assert "localhost" in interpolate(value, {}).split(",")
    web = COMPOSE["services"]["web"]["command"]
    assert web[web.index("--port") + 1] == "9000"


def _production(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "REPO_SEARCH_"))}
    base.pop("SECURE_COOKIES", None)
    base.update(
        DJANGO_SETTINGS_MODULE="reposearch.settings.production",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="search.example.com",
    )
    base.update(env)
    code = (
        "from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT, env=base, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _example_value(name: str) -> str:
    example = (ROOT / ".env.example").read_text()
    return re.search(rf"^{name}=(.*)$", example, flags=re.MULTILINE).group(1)  # type: ignore[union-attr]


def test_the_placeholder_secret_key_of_env_example_is_refused() -> None:
    result = _production({"SECRET_KEY": _example_value("SECRET_KEY")})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "SECRET_KEY is the placeholder of .env.example" in line
    assert "python -c 'import secrets; print(secrets.token_urlsafe(50))'" in line


@pytest.mark.parametrize(
    ("url_name", "compose_name"),
    [("DATABASE_URL", "POSTGRES_PASSWORD"), ("REDIS_URL", "REDIS_PASSWORD")],
)
def test_the_placeholder_passwords_of_env_example_are_refused(
    url_name: str, compose_name: str
) -> None:
    """What compose builds from a copied .env.example: the URLs carry its placeholder passwords."""
    from tests.compose_env import interpolate

    placeholders = {name: _example_value(name) for name in ("POSTGRES_PASSWORD", "REDIS_PASSWORD")}
    url = interpolate(COMPOSE["x-app-env"][url_name], placeholders)
    url = url.replace("@db:5432/", "@127.0.0.1:5432/").replace("@redis:6379/", "@127.0.0.1:6379/")
    result = _production({url_name: url})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert f"the password in {url_name} ({compose_name} in docker compose's .env)" in line
    assert "placeholder of .env.example" in line and "secrets.token_hex(24)" in line
    assert placeholders[compose_name] not in line  # the message never repeats a password


def test_cookies_are_secure_unless_plain_http_is_asked_for() -> None:
    assert _production({}).stdout.split()[-2:] == ["True", "True"]
    plain = _production({"REPO_SEARCH_PLAIN_HTTP": "1"})
    assert plain.stdout.split()[-2:] == ["False", "False"], plain.stderr
    # The older spelling keeps working for deployments that set it.
    assert _production({"SECURE_COOKIES": "0"}).stdout.split()[-2:] == ["False", "False"]
    assert _production({"SECURE_COOKIES": "1"}).stdout.split()[-2:] == ["True", "True"]
