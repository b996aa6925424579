"""docker-compose.yml cannot run here (no Docker engine), so its shape is checked against the code."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
ENV_MODULE = "".join(
    (ROOT / "reposearch" / "settings" / name).read_text() for name in ("base.py", "env.py")
)


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
