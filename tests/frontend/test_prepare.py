"""``manage.py prepare``: what make up and compose's ``migrate`` run before the site starts, in
one process -- migrations, static files, the first administrator, the repository file."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from indexing.models import Repository

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/team/alpha.git"


def test_prepare_does_every_start_step_and_a_second_run_changes_nothing(  # type: ignore[no-untyped-def]
    settings, tmp_path: Path
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    settings.STATIC_ROOT = tmp_path / "static"
    repos = tmp_path / "repos.yaml"
    repos.write_text(f"repositories:\n  - url: {URL}\n    name: alpha\n")
    settings.REPO_SEARCH_REPOS_FILE = str(repos)

    out = io.StringIO()
    call_command("prepare", stdout=out)
    printed = out.getvalue()
    assert "No migrations to apply" in printed  # the test database is migrated already
    assert (tmp_path / "static" / "frontend" / "style.css").is_file()  # the site's own files
    assert (tmp_path / "static" / "admin" / "css" / "base.css").is_file()  # and the admin's
    assert (tmp_path / "initial-admin.txt").is_file() and User.objects.get(username="admin")
    assert "created the administrator 'admin'" in printed
    assert Repository.objects.get(url=URL).name == "alpha"
    assert "1 add, 0 update, 0 remove, 0 unchanged (applied)" in printed

    out = io.StringIO()
    call_command("prepare", stdout=out)
    assert "0 add, 0 update, 0 remove, 1 unchanged (applied)" in out.getvalue()
    assert User.objects.count() == 1 and Repository.objects.count() == 1


def test_a_repository_file_it_cannot_apply_is_reported_and_the_start_goes_on(  # type: ignore[no-untyped-def]
    settings, tmp_path: Path
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    settings.STATIC_ROOT = tmp_path / "static"
    settings.REPO_SEARCH_REPOS_FILE = str(tmp_path / "nonexist.yaml")
    err = io.StringIO()
    call_command("prepare", stdout=io.StringIO(), stderr=err)  # no CommandError: the site starts
    assert err.getvalue() == (
        f"reposearch: {tmp_path}/nonexist.yaml: cannot read it: No such file or directory\n"
        "the repository file was not applied; nothing was changed\n"
    )
    assert User.objects.get(username="admin")  # the steps before it ran

    settings.REPO_SEARCH_REPOS_FILE = None  # none configured: nothing to apply, nothing said
    err = io.StringIO()
    call_command("prepare", stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == ""
