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
    result = run_manage({"REPO_SEARCH_MAX_REPOS": "7", "LLM_PROVIDER": "openai"})
    assert result.returncode == 0, result.stderr


def test_production_refuses_debug_and_dev_secret() -> None:
    result = run_manage({"DEBUG": "1"}, "reposearch.settings.production")
    assert result.returncode == 2
    assert "DEBUG is on" in result.stderr

    result = run_manage(
        {"DEBUG": "0", "ALLOWED_HOSTS": "search.example.com"}, "reposearch.settings.production"
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


def test_a_git_token_without_the_hosts_that_may_receive_it_is_refused() -> None:
    result = run_manage({"REPO_SEARCH_GIT_TOKEN": "ghp_secretvalue"})
    assert result.returncode == 2
    assert "REPO_SEARCH_GIT_TOKEN_HOSTS is empty" in result.stderr
    assert "ghp_secretvalue" not in result.stderr
    ok = run_manage(
        {"REPO_SEARCH_GIT_TOKEN": "ghp_secretvalue", "REPO_SEARCH_GIT_TOKEN_HOSTS": "github.com"}
    )
    assert ok.returncode == 0, ok.stderr
