"""docker-compose.yml cannot run here (no Docker engine), so its shape is checked against the code."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
ENV_MODULE = "".join(path.read_text() for path in (ROOT / "reposearch" / "settings").glob("*.py"))


def test_services_exist_with_images_or_builds() -> None:
    services = COMPOSE["services"]
    assert {"db", "redis", "web", "worker"} <= set(services)
    assert "pgvector" in services["db"]["image"]
    assert services["redis"]["image"].startswith("redis")
    for name in ("web", "worker", "worker-git", "migrate", "beat"):
        assert services[name]["build"] == "."
    assert (ROOT / "Dockerfile").exists()


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


def test_dockerfile_default_command_is_the_web_command() -> None:
    import json

    from reposearch.processes import web_command

    cmd = next(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD")
    )
    assert json.loads(cmd.removeprefix("CMD").strip()) == web_command("0.0.0.0", 9000, 2)


APP_SERVICES = ("migrate", "web", "worker-git", "worker", "beat")


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
    assert "host.docker.internal:host-gateway" in COMPOSE["services"]["worker"]["extra_hosts"]


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
