"""Declarative repository sets: ``manage.py sync_repos FILE`` adds, updates and (with
``prune: true``) removes repositories, refuses an invalid file with its line numbers and changes
nothing then, never prunes a repository added by hand, and the beat check applies an edited file."""

from __future__ import annotations

import json
import logging
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from accounts.models import AuditEntry
from indexing.models import IndexJob, Repository, RepositoryFileState
from indexing.repository_sets.reconcile import check_repository_file
from indexing.services.repositories import add_repository
from indexing.services.visibility import visibility_group_names
from tests.accounts_support import token_client

pytestmark = pytest.mark.django_db

A = "http://127.0.0.1:9/team/alpha.git"
B = "http://127.0.0.1:9/team/beta.git"


def sync(path: Path, *extra: str) -> list[str]:
    out = StringIO()
    call_command("sync_repos", str(path), *extra, stdout=out)
    return out.getvalue().splitlines()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_file_adds_then_updates_then_prunes_only_what_it_added(
    tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    Group.objects.create(name="team-a")
    by_hand = add_repository("http://127.0.0.1:9/team/by-hand.git").repository
    path = write(
        tmp_path / "repos.yaml",
        f"""\
repositories:
  - url: {A}
    name: alpha
    visibility_groups: [team-a]
    poll_interval_secs: 300
  - url: {B}
    branch: dev
""",
    )
    lines = sync(path)
    assert [line.split()[0] for line in lines[:-1]] == ["add", "add"]
    assert lines[-1].endswith("2 add, 0 update, 0 remove, 0 unchanged (applied)")
    alpha = Repository.objects.get(url=A)
    beta = Repository.objects.get(url=B)
    assert (alpha.name, alpha.poll_interval_secs, alpha.managed_by_file) == ("alpha", 300, True)
    assert visibility_group_names(alpha) == ["team-a"]
    assert (beta.branch, beta.managed_by_file) == ("dev", True)
    shown = token_client().get(f"/api/repos/{alpha.pk}").json()
    assert shown["managed_by_file"] is True and shown["visibility_groups"] == ["team-a"]
    assert token_client().get(f"/api/repos/{by_hand.pk}").json()["managed_by_file"] is False
    assert IndexJob.objects.filter(repository__in=[alpha, beta]).count() == 2  # queued to index
    added = AuditEntry.objects.filter(action="repos_file.add").order_by("id")
    assert [(row.target, row.details["line"], row.actor) for row in added] == [
        (str(alpha.pk), 2, ""), (str(beta.pk), 6, "")
    ]  # fmt: skip
    assert added[0].details["file"] == str(path)

    # Unchanged file: nothing to do.
    assert [line.split()[0] for line in sync(path)[:-1]] == ["unchanged", "unchanged"]

    # alpha renamed and opened to everyone, beta dropped, the repository added by hand listed.
    write(
        path,
        f"""\
repositories:
  - url: {A}
    name: alpha-renamed
    visibility_groups: []
  - url: {by_hand.url}
    contextual_summaries: true
""",
    )
    lines = sync(path)
    assert lines[0].startswith("update    alpha ")
    assert "name 'alpha' -> 'alpha-renamed'" in lines[0]
    assert "visibility_groups ['team-a'] -> []" in lines[0]
    assert lines[1].startswith("update") and "added by hand" in lines[1]
    assert lines[2].startswith("unchanged") and "prune is false" in lines[2]
    alpha.refresh_from_db()
    assert alpha.name == "alpha-renamed" and visibility_group_names(alpha) == []
    assert Repository.objects.filter(pk=beta.pk).exists()  # prune is off: kept
    updated = AuditEntry.objects.get(action="repos_file.update", target=str(alpha.pk))
    assert updated.details["changes"]["name"] == ["alpha", "alpha-renamed"]
    assert updated.details["line"] == 2

    # prune: true removes beta (the file added it), never the repository added by hand.
    write(path, f"prune: true\nrepositories:\n  - url: {A}\n")
    with django_capture_on_commit_callbacks(execute=True):  # removals run once it commits
        lines = sync(path)
    assert [line.split()[0] for line in lines[:-1]] == ["unchanged", "remove"]
    assert set(Repository.objects.values_list("url", flat=True)) == {A, by_hand.url}
    removed = AuditEntry.objects.get(action="repos_file.remove")
    assert removed.target == str(beta.pk) and removed.details["file"] == str(path)


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "repos.json", json.dumps({"repositories": [{"url": A}]}))
    lines = sync(path, "--dry-run")
    assert lines[0].startswith("add ") and A in lines[0]
    assert lines[-1].endswith("(dry run, nothing changed)")
    assert not Repository.objects.exists()
    assert not AuditEntry.objects.filter(action__startswith="repos_file").exists()


INVALID_YAML = f"""\
repositories:
  - url: {A}
  - url: ftp://example.com/x.git
  - url: {B}
    colour: red
  - url: http://127.0.0.1:9/team/gamma.git
    poll_interval_secs: soon
  - url: {A}
  - url: http://127.0.0.1:9/team/delta.git
    visibility_groups: [no-such-group]
  - url: http://127.0.0.1:9/team/eps.git
    branch: "a..b"
"""

INVALID_JSON = """\
{"repositories": [
  {"url": "A"},
  {"url": "ftp://example.com/x.git"},
  {"url": "B",
   "colour": "red"},
  {"url": "http://127.0.0.1:9/team/gamma.git",
   "poll_interval_secs": "soon"},
  {"url": "A"},
  {"url": "http://127.0.0.1:9/team/delta.git",
   "visibility_groups": ["no-such-group"]},
  {"url": "http://127.0.0.1:9/team/eps.git",
   "branch": "a..b"}
]}
""".replace('"A"', json.dumps(A)).replace('"B"', json.dumps(B))


@pytest.mark.parametrize(
    ("name", "text"), [("repos.yaml", INVALID_YAML), ("repos.json", INVALID_JSON)]
)
def test_an_invalid_file_is_refused_with_its_line_numbers_and_nothing_is_applied(
    tmp_path: Path, name: str, text: str
) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(CommandError) as refused:
        sync(path)
    message = str(refused.value)
    for line, words in [
        (3, "url 'ftp://example.com/x.git'"),
        (5, "unknown field 'colour'"),
        (7, "poll_interval_secs must be a whole number"),
        (8, f"{A} is listed twice (also line 2)"),
        (10, "no group named 'no-such-group'"),
        (12, "'a..b' is not a valid branch name"),
    ]:
        assert f"{path}:{line}: {words}" in message, message
    assert "nothing was changed" in message
    assert not Repository.objects.exists()  # not even the valid first entry
    assert not IndexJob.objects.exists()
    assert not AuditEntry.objects.filter(action__startswith="repos_file").exists()
    assert RepositoryFileState.objects.get(path=str(path)).error.startswith(f"{path}:3:")


def test_not_yaml_and_a_missing_list_are_refused_with_a_line(tmp_path: Path) -> None:
    path = write(tmp_path / "repos.yaml", "repositories:\n  - url: [unclosed\n")
    with pytest.raises(CommandError, match=r"repos.yaml:3: not valid YAML"):
        sync(path)
    path = write(tmp_path / "typed.yaml", "repositories:\n  - url: 42\n    name: ok\n")
    with pytest.raises(CommandError, match=r"typed.yaml:2: url must be a string, not 42"):
        sync(path)
    path = write(tmp_path / "other.yaml", "prune: yes please\nrepos: []\n")
    with pytest.raises(CommandError) as refused:
        sync(path)
    assert "other.yaml:1: prune must be true or false" in str(refused.value)
    assert "other.yaml:2: unknown field 'repos'" in str(refused.value)


def test_from_settings_refuses_a_file_it_cannot_apply_as_the_file_itself_is(
    tmp_path: Path, settings
) -> None:
    # Exit status 1 (CommandError), as `sync_repos FILE`; `prepare` reports it and starts anyway.
    settings.REPO_SEARCH_REPOS_FILE = str(write(tmp_path / "r.yaml", "repositories: 3\n"))
    with pytest.raises(CommandError, match=r"r.yaml:1: repositories must be a list"):
        call_command("sync_repos", "--from-settings", stdout=StringIO())
    settings.REPO_SEARCH_REPOS_FILE = str(tmp_path / "nonexist.yaml")
    with pytest.raises(CommandError) as unreadable:
        call_command("sync_repos", "--from-settings", stdout=StringIO())
    assert "nonexist.yaml: cannot read it: No such file or directory" in str(unreadable.value)
    assert "the repository file was not applied; nothing was changed" in str(unreadable.value)
    settings.REPO_SEARCH_REPOS_FILE = None
    with pytest.raises(CommandError) as unset:
        call_command("sync_repos", "--from-settings", stdout=StringIO())
    assert str(unset.value) == (
        "REPO_SEARCH_REPOS_FILE is not set, so there is no repository file to apply: set it to"
        " the file's path, or give the file: sync_repos FILE"
    )


def test_from_settings_applies_the_file_at_start_and_the_beat_check_then_sees_no_change(
    tmp_path: Path, settings
) -> None:
    path = write(tmp_path / "repos.yaml", f"repositories:\n  - url: {A}\n    name: alpha\n")
    settings.REPO_SEARCH_REPOS_FILE = str(path)
    out = StringIO()
    call_command("sync_repos", "--from-settings", stdout=out)  # what make up / migrate run
    assert "1 add, 0 update, 0 remove, 0 unchanged (applied)" in out.getvalue()
    assert Repository.objects.get(url=A).managed_by_file
    assert check_repository_file() == "unchanged"  # not applied a second time by beat


def test_the_beat_check_applies_the_file_when_it_changes(
    tmp_path: Path, settings, django_capture_on_commit_callbacks
) -> None:
    path = write(tmp_path / "repos.yaml", f"repositories:\n  - url: {A}\n")
    settings.REPO_SEARCH_REPOS_FILE = str(path)
    assert check_repository_file() == "applied: 1 add, 0 update, 0 remove, 0 unchanged"
    assert check_repository_file() == "unchanged"
    write(path, f"repositories:\n  - url: {A}\n    name: renamed\n")
    assert check_repository_file().startswith("applied: 0 add, 1 update")
    assert Repository.objects.get(url=A).name == "renamed"

    write(path, "repositories:\n  - nourl: 1\n")  # an invalid edit: refused once, kept on record
    assert check_repository_file() == "invalid"
    assert "'url' is missing" in RepositoryFileState.objects.get(path=str(path)).error
    assert check_repository_file() == "unchanged"  # the same invalid file is not retried
    assert Repository.objects.get(url=A).name == "renamed"

    write(path, f"prune: true\nrepositories:\n  - url: {B}\n")
    with django_capture_on_commit_callbacks(execute=True):
        assert check_repository_file() == "applied: 1 add, 0 update, 1 remove, 0 unchanged"
    assert list(Repository.objects.values_list("url", flat=True)) == [B]
    assert RepositoryFileState.objects.get(path=str(path)).error == ""


def test_the_beat_check_is_silent_without_a_file_and_names_a_missing_one_once(
    tmp_path: Path, settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="indexing.repository_sets.reconcile")
    settings.REPO_SEARCH_REPOS_FILE = None
    assert check_repository_file() == "off"
    assert caplog.records == []

    path = tmp_path / "repos.yaml"
    settings.REPO_SEARCH_REPOS_FILE = str(path)
    said = f"repository file not applied: {path}: cannot read it: No such file or directory"
    assert [check_repository_file() for _ in range(3)] == ["unreadable"] * 3
    assert [record.getMessage() for record in caplog.records] == [said]  # not every minute

    write(path, f"repositories:\n  - url: {A}\n")  # it appears: applied at the next check
    assert check_repository_file() == "applied: 1 add, 0 update, 0 remove, 0 unchanged"
    path.unlink()  # gone again: said again, once
    caplog.clear()
    assert [check_repository_file() for _ in range(2)] == ["unreadable"] * 2
    assert [record.getMessage() for record in caplog.records] == [said]


def test_a_file_that_would_pass_the_repository_limit_adds_none(tmp_path: Path, settings) -> None:
    settings.REPO_SEARCH_MAX_REPOS = 2
    add_repository("http://127.0.0.1:9/team/by-hand.git")
    path = write(tmp_path / "repos.yaml", f"repositories:\n  - url: {A}\n  - url: {B}\n")
    with pytest.raises(CommandError, match=r"3 repositories would pass the limit of 2"):
        sync(path)
    assert Repository.objects.count() == 1
