"""An invalid setting stops start-up with one line naming the variable; production is strict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_manage(env_overrides: dict[str, str], settings_module: str = "reposearch.settings.base"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "REPO_SEARCH_"))}
    env["DJANGO_SETTINGS_MODULE"] = settings_module
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("REPO_SEARCH_MAX_REPOS", "zero", "REPO_SEARCH_MAX_REPOS='zero' is not a positive integer"),
        ("REPO_SEARCH_MAX_REPOS", "0", "REPO_SEARCH_MAX_REPOS='0' is not a positive integer"),
        (
            "REPO_SEARCH_CLONE_TIMEOUT_SECS",
            "-5",
            "REPO_SEARCH_CLONE_TIMEOUT_SECS='-5' is not a positive",
        ),
        (
            "REPO_SEARCH_MAX_REPO_SIZE_MB",
            "1.5",
            "REPO_SEARCH_MAX_REPO_SIZE_MB='1.5' is not a positive",
        ),
        ("LLM_PROVIDER", "gpt", "LLM_PROVIDER='gpt' is not one of: ollama, openai, none"),
        ("LLM_EMBEDDING_PROVIDER", "torch", "LLM_EMBEDDING_PROVIDER='torch' is not one of"),
        ("LLM_BASE_URL", "localhost:11434", "LLM_BASE_URL='localhost:11434' is not a valid URL"),
        ("DATABASE_URL", "mysql://db/x", "DATABASE_URL='mysql://db/x' is not a valid URL"),
        ("REDIS_URL", "http://redis:6379", "REDIS_URL='http://redis:6379' is not a valid URL"),
        ("REPO_SEARCH_BIND_ADDR", "9000", "REPO_SEARCH_BIND_ADDR='9000' is not host:port"),
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("REPO_SEARCH_ALLOW_PRIVATE_HOSTS", "sure", "REPO_SEARCH_ALLOW_PRIVATE_HOSTS='sure'"),
        ("REPO_SEARCH_PG_PORT", "99999", "REPO_SEARCH_PG_PORT='99999' is not a TCP port"),
        ("REPO_SEARCH_REDIS_PORT", "redis", "REPO_SEARCH_REDIS_PORT='redis' is not a TCP port"),
        ("REPO_SEARCH_WEB_WORKERS", "0", "REPO_SEARCH_WEB_WORKERS='0' is not a positive integer"),
        (
            "LOG_LEVEL",
            "verbose",
            "LOG_LEVEL='verbose' is not a log level (one of: CRITICAL, FATAL, ERROR, WARN, WARNING,"
            " INFO, DEBUG, NOTSET; any case)",
        ),
    ],
)
def test_invalid_value_stops_startup_with_one_line(name: str, value: str, expected: str) -> None:
    result = run_manage({name: value})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("reposearch: configuration error: ")
    assert expected in lines[0]


def test_password_in_a_bad_url_is_not_echoed() -> None:
    result = run_manage({"DATABASE_URL": "mysql://admin:hunter2@db/x"})
    assert result.returncode == 2
    assert "hunter2" not in result.stderr
    assert "DATABASE_URL" in result.stderr


def test_valid_environment_starts() -> None:
    result = run_manage(
        {"REPO_SEARCH_MAX_REPOS": "7", "LLM_PROVIDER": "openai", "LOG_LEVEL": "warning"}
    )
    assert result.returncode == 0, result.stderr


def test_production_refuses_debug_and_dev_secret(tmp_path: Path) -> None:
    result = run_manage({"DEBUG": "1"}, "reposearch.settings.production")
    assert result.returncode == 2
    assert "DEBUG is on" in result.stderr

    # A data directory without the key `make up` keeps (the checkout's data/ may have one).
    result = run_manage(
        {
            "DEBUG": "0",
            "ALLOWED_HOSTS": "search.example.com",
            "REPO_SEARCH_DATA_DIR": str(tmp_path),
        },
        "reposearch.settings.production",
    )
    assert result.returncode == 2
    assert "SECRET_KEY is missing or too short" in result.stderr

    result = run_manage(
        {"DEBUG": "0", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "search.example.com"},
        "reposearch.settings.production",
    )
    assert result.returncode == 0, result.stderr


def test_local_embedding_provider_rejects_a_model_it_does_not_ship() -> None:
    result = run_manage(
        {"LLM_EMBEDDING_PROVIDER": "local", "LLM_EMBEDDING_MODEL": "nomic-embed-text"}
    )
    assert result.returncode == 2
    assert "LLM_EMBEDDING_MODEL='nomic-embed-text'" in result.stderr
    assert "ships all-MiniLM-L6-v2, bge-small-en-v1.5" in result.stderr
    shipped = run_manage(
        {"LLM_EMBEDDING_PROVIDER": "local", "LLM_EMBEDDING_MODEL": "BAAI/bge-small-en-v1.5"}
    )
    assert shipped.returncode == 0, shipped.stderr


def test_a_git_token_without_the_hosts_that_may_receive_it_is_refused() -> None:
    result = run_manage({"REPO_SEARCH_GIT_TOKEN": "ghp_secretvalue"})
    assert result.returncode == 2
    assert "REPO_SEARCH_GIT_TOKEN_HOSTS is empty" in result.stderr
    assert "ghp_secretvalue" not in result.stderr
    ok = run_manage(
        {"REPO_SEARCH_GIT_TOKEN": "ghp_secretvalue", "REPO_SEARCH_GIT_TOKEN_HOSTS": "github.com"}
    )
    assert ok.returncode == 0, ok.stderr


def run_shell(code: str, env_overrides: dict[str, str], cwd: Path = ROOT) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "REPO_SEARCH_"))}
    for name in ("DATABASE_URL", "REDIS_URL", "DEBUG", "ALLOWED_HOSTS"):
        env.pop(name, None)
    env["DJANGO_SETTINGS_MODULE"] = "reposearch.settings.base"
    env.update(env_overrides)
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_commands_reach_the_servers_of_make_up_on_the_same_ports(tmp_path: Path) -> None:
    code = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['PORT'], s.CELERY_BROKER_URL, s.DEBUG)"
    )
    ports = {
        "REPO_SEARCH_PG_PORT": "55432",
        "REPO_SEARCH_REDIS_PORT": "56379",
        "REPO_SEARCH_DATA_DIR": str(tmp_path),  # no credentials.env: no passwords yet
    }
    assert run_shell(code, ports) == "55432 redis://127.0.0.1:56379/0 False"
    given = dict(ports, DATABASE_URL="postgresql://u@db.example:5433/x", DEBUG="1")
    assert run_shell(code, given).split()[0::2] == ["5433", "True"]


def test_commands_connect_with_the_passwords_make_up_keeps_in_the_data_directory(
    tmp_path: Path,
) -> None:
    from reposearch import embedded_credentials

    creds, created = embedded_credentials.ensure(tmp_path)
    assert created
    code = (
        "from django.conf import settings as s; d = s.DATABASES['default']; "
        "print(d['USER'], d['PASSWORD'], d['NAME'], s.CELERY_BROKER_URL)"
    )
    env = {"REPO_SEARCH_DATA_DIR": str(tmp_path), "REPO_SEARCH_REDIS_PORT": "56379"}
    assert run_shell(code, env).split() == [
        "reposearch",
        creds.pg_app_password,
        "reposearch",
        f"redis://:{creds.redis_password}@127.0.0.1:56379/0",
    ]
    # DATABASE_URL / REDIS_URL still win over the file.
    given = dict(env, DATABASE_URL="postgresql://u:p@db.example/x", REDIS_URL="redis://r:6379/1")
    assert run_shell(code, given).split() == ["u", "p", "x", "redis://r:6379/1"]


def test_a_command_started_elsewhere_uses_the_checkouts_data_directory(tmp_path: Path) -> None:
    # An editor starts `manage.py mcp` in the user's project: it must find make up's clones.
    code = "from django.conf import settings as s; print(s.REPO_SEARCH_DATA_DIR)"
    assert run_shell(code, {}, cwd=tmp_path) == str(ROOT / "data")
    assert run_shell(code, {"REPO_SEARCH_DATA_DIR": "mine"}, cwd=tmp_path) == str(tmp_path / "mine")


def test_allowed_hosts_cover_the_bind_address() -> None:
    code = "from django.conf import settings as s; print(','.join(s.ALLOWED_HOSTS))"
    hosts = run_shell(code, {"REPO_SEARCH_BIND_ADDR": "10.1.2.3:9000"}).split(",")
    assert {"localhost", "127.0.0.1", "[::1]", "10.1.2.3"} <= set(hosts)
    given = run_shell(code, {"ALLOWED_HOSTS": "search.example.com"})
    assert given == "search.example.com"


def test_the_cross_encoder_is_on_unless_the_operator_turns_it_off() -> None:
    code = "from django.conf import settings; print(settings.REPO_SEARCH_CROSS_ENCODER)"
    assert run_shell(code, {}) == "True"
    assert run_shell(code, {"REPO_SEARCH_CROSS_ENCODER": "0"}) == "False"
