"""The data directory is private to the user running reposearch, and ``make up`` keeps its own
``SECRET_KEY`` there: other local users cannot read clones, Redis's file or the passwords, and
sessions are signed with a key nobody else has, the same across restarts."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reposearch import data_folder, embedded_stack
from reposearch.settings.env import DEVELOPMENT_SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def settings_value(data: Path, expression: str, module: str = "reposearch.settings.base") -> str:
    """``expression`` evaluated in a fresh process's settings, with ``data`` as data directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPO_SEARCH_", "LLM_"))}
    env.pop("SECRET_KEY", None)
    env.update(
        REPO_SEARCH_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE=module, ALLOWED_HOSTS="x.example"
    )
    code = (
        "from reposearch.startup import load_settings_or_exit; load_settings_or_exit(); "
        f"from django.conf import settings; print({expression})"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip() + result.stderr


def test_a_new_data_directory_is_made_readable_by_its_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "nested" / "data"
    old_umask = os.umask(0o022)
    try:
        data_folder.make_private(data)
    finally:
        os.umask(old_umask)
    assert mode(data) == 0o700


def test_an_existing_open_data_directory_and_its_folders_are_tightened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "repos" / "some-clone").mkdir(parents=True)
    (data / "redis").mkdir()
    for folder in (data, data / "repos", data / "redis"):
        folder.chmod(0o755)
    tightened = data_folder.make_private(data, create=False)
    assert set(tightened) == {data, data / "repos", data / "redis"}
    assert mode(data) == mode(data / "repos") == mode(data / "redis") == 0o700
    # A group given on purpose (the embedded PostgreSQL's user's, as root) may pass through.
    if os.geteuid() == 0:
        os.chown(data, -1, 65534)  # nogroup
        data.chmod(0o755)
        data_folder.make_private(data, create=False)
        assert mode(data) == 0o710


def test_every_process_start_tightens_an_open_data_directory(tmp_path: Path) -> None:
    """The start-up guard of manage.py, the web server and the workers (a compose volume made
    before the rule is tightened at its next start)."""
    data = tmp_path / "data"
    (data / "repos").mkdir(parents=True)
    data.chmod(0o755)
    (data / "repos").chmod(0o777)
    output = settings_value(data, "settings.REPO_SEARCH_DATA_DIR")
    assert mode(data) == 0o700 and mode(data / "repos") == 0o700
    assert "was readable by others; now it is not" in output


def test_make_up_keeps_one_random_secret_key_across_restarts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SECRET_KEY", raising=False)
    data = tmp_path / "data"
    embedded_stack._prepare_data_dir(data)  # what make up does first
    key_file = data_folder.secret_key_path(data)
    key = key_file.read_text().strip()
    assert mode(key_file) == 0o600 and mode(data) in (0o700, 0o710)
    assert len(key) >= 50 and key != DEVELOPMENT_SECRET_KEY
    said = capsys.readouterr().out
    assert "generated a SECRET_KEY" in said and key not in said

    embedded_stack._prepare_data_dir(data)  # the next start
    assert key_file.read_text().strip() == key
    assert "generated a SECRET_KEY" not in capsys.readouterr().out

    # What the web server and the workers sign with, and production settings accept it.
    assert settings_value(data, "settings.SECRET_KEY") == key
    production = "settings.SECRET_KEY"
    assert settings_value(data, production, "reposearch.settings.production") == key


def test_another_data_directory_gets_another_key(tmp_path: Path) -> None:
    first, _ = data_folder.ensure_secret_key(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    second, created = data_folder.ensure_secret_key(other)
    assert created and first != second


def test_without_a_kept_key_production_still_refuses_the_development_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPO_SEARCH_", "LLM_"))}
    env.pop("SECRET_KEY", None)
    env.update(
        REPO_SEARCH_DATA_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="reposearch.settings.production",
        ALLOWED_HOSTS="x.example",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "SECRET_KEY is missing or too short" in result.stderr


def test_a_clone_fetched_into_a_new_data_directory_is_private_from_the_start(
    tmp_path: Path,
) -> None:
    """A user's first ``make up`` printed "data/repos was readable by others; now it is not"
    for folders reposearch had made itself: they must be made private, not tightened later."""
    from tests.indexing.git_fetch_support import fetch

    source = tmp_path / "source"
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    (source / "a.py").write_text("x = 1\n")
    git = ["git", "-C", str(source), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    data = tmp_path / "data"
    data_folder.make_private(data)
    old_umask = os.umask(0o022)
    try:
        clone = data / "repos" / "1234" / "main"
        fetch(str(source), clone, allow_local_paths=True)
        postings = data_folder.private_folder(data / "postings" / "7")
    finally:
        os.umask(old_umask)
    assert (clone / "HEAD").is_file()  # the fetch ran
    for folder in (data / "repos", data / "repos" / "1234", clone, data / "postings", postings):
        assert mode(folder) == 0o700, folder
    assert data_folder.make_private(data, create=False) == []  # nothing left to warn about
