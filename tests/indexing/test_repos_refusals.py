"""Adding repositories: duplicates by the resolved URL and branch, git's branch-name rules,
relative paths, NUL characters and wrong types — each refused before any job exists."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from dulwich.repo import Repo
from rest_framework.test import APIClient

from indexing.exceptions import DuplicateRepository, InvalidRepositoryInput
from indexing.models import IndexJob, JobState, Repository
from indexing.services.repositories import add_repository
from indexing.services.stages.fetch_and_index import run_fetch
from tests.accounts_support import token_client
from tests.refusals import error_of

ODD_BRANCH_NAMES = [
    "main", "a;b", "`id`", "$(id)", "a|b", "a>b", "a'b", 'a"b', "#a", "a{b}", "ünï", "@",
    "a@b", "a-", "a/-b", "x.lock.y", "a,b", "!a", "%41", "+a", "feature/x", "a/b/c",
    "a/.b", ".a", "a.", "a..b", "a.lock", "a/b.lock/c", "a@{b", "@{-1}", "-a", "a/", "/a",
    "a//b", "a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", "a\tb", "a\x7fb",
    "HEAD", "a/.", ".", "..", "a.lock/b",
]  # fmt: skip


@pytest.fixture
def api() -> APIClient:
    return token_client()


def git_accepts(name: str) -> bool:
    """git's own verdict; ``--branch`` echoes the name back when it takes it literally."""
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name], capture_output=True, text=True
    )
    return done.returncode == 0 and done.stdout.rstrip("\n") == name


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command to compare with")
@pytest.mark.django_db
def test_branch_names_are_accepted_exactly_when_git_accepts_them(api, public_dns) -> None:
    assert len(ODD_BRANCH_NAMES) >= 40
    verdicts = {}
    for position, name in enumerate(ODD_BRANCH_NAMES):
        response = api.post(
            "/api/repos",
            {"url": f"https://example.org/odd/r{position}.git", "branch": name},
            format="json",
        )
        verdicts[name] = response.status_code
        if response.status_code == 400:
            error = error_of(response)
            assert error["code"] == "invalid_branch", (name, error)
            assert "is not a valid branch name" in error["message"]
            assert not Repository.objects.filter(url__endswith=f"/r{position}.git").exists()
    expected = {name: 202 if git_accepts(name) else 400 for name in ODD_BRANCH_NAMES}
    assert verdicts == expected
    # Both verdicts occur, so the comparison says something.
    assert set(expected.values()) == {202, 400}
    assert Repository.objects.filter(branch="a;b").exists()


@pytest.mark.django_db
def test_the_same_url_again_without_a_branch_after_its_branch_resolved_is_409(
    api, public_dns
) -> None:
    first = api.post("/api/repos", {"url": "https://example.org/team/app.git"}, format="json")
    assert first.status_code == 202
    # What the fetch does once it learnt the remote's default branch.
    Repository.objects.filter(pk=first.json()["id"]).update(branch="main")
    spellings = [
        "https://example.org/team/app.git",
        "https://example.org/team/app",
        "https://example.org/team/app/",
        "https://EXAMPLE.org/team/app.git",
        "https://example.org:443/team/app",
    ]
    for url in spellings:
        for body in ({"url": url}, {"url": url, "branch": "main"}):
            response = api.post("/api/repos", body, format="json")
            assert response.status_code == 409, (body, response.json())
            error = error_of(response)
            assert error["code"] == "duplicate"
            assert error["details"]["repository_id"] == first.json()["id"]
            assert "team/app" in error["message"] and "branch main" in error["message"]
    assert Repository.objects.count() == 1
    assert IndexJob.objects.count() == 1
    other = api.post(
        "/api/repos", {"url": "https://example.org/team/app", "branch": "dev"}, format="json"
    )
    assert other.status_code == 202


@pytest.mark.django_db
def test_a_copy_whose_default_branch_was_added_meanwhile_fails_its_fetch_clearly(
    source: Repo, settings
) -> None:
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    pending = add_repository(source.path)  # its default branch is not known yet
    explicit = add_repository(source.path, branch="main")
    assert run_fetch(pending.pk) is False
    pending.refresh_from_db()
    assert pending.state == JobState.FAILED
    assert "already indexed as" in pending.error and str(explicit.repository.pk) in pending.error
    assert Repository.objects.get(pk=pending.repository.pk).branch == ""


@pytest.mark.django_db
def test_services_refuse_with_domain_exceptions_not_http_errors(public_dns) -> None:
    add_repository("https://example.org/team/app.git")
    with pytest.raises(DuplicateRepository) as duplicate:
        add_repository("https://example.org/team/app")
    assert duplicate.value.code == "duplicate"
    with pytest.raises(InvalidRepositoryInput) as invalid:
        add_repository("https://example.org/team/lib.git", branch="a..b")
    assert invalid.value.code == "invalid_branch"
    assert not hasattr(invalid.value, "status_code")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"url": 1}, "url: Not a valid string"),
        ({"url": "foo"}, "is not a URL or absolute path"),
        ({"url": "./repo"}, "is not a URL or absolute path"),
        ({"url": "~/repo"}, "is not a URL or absolute path"),
        ({"url": "https://example.org/a\x00b.git"}, "url: Null characters are not allowed"),
        ({"url": "https://example.org/a.git", "name": "a\x00b"}, "name: Null characters"),
        ({"url": "https://example.org/a.git", "branch": "a\x00b"}, "branch: Null characters"),
        ({"url": "https://example.org/a.git", "branch": 5}, "branch: Not a valid string"),
        ({"url": "https://example.org/a.git", "contextual_summaries": "yes"}, "Must be a valid"),
        ([{"url": "https://example.org/a.git"}], "JSON object"),
    ],
)
def test_bad_input_to_add_is_400_and_creates_nothing(
    api, public_dns, settings, tmp_path: Path, monkeypatch, body, fragment
) -> None:
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    # A "repo" directory where the server runs must not make the relative path work.
    monkeypatch.chdir(tmp_path)
    Repo.init(str(tmp_path / "repo"), mkdir=True).close()
    response = api.post("/api/repos", body, format="json")
    assert response.status_code == 400, response.json()
    assert fragment in error_of(response)["message"]
    assert Repository.objects.count() == 0
    assert IndexJob.objects.count() == 0


@pytest.mark.django_db
def test_renaming_to_a_nul_or_non_string_name_is_400(api, public_dns) -> None:
    job = add_repository("https://example.org/team/app.git")
    for name in ("a\x00b", 7, ""):
        response = api.patch(f"/api/repos/{job.repository.pk}", {"name": name}, format="json")
        assert response.status_code == 400, (name, response.json())
        assert error_of(response)["message"].startswith("name")
    assert Repository.objects.get(pk=job.repository.pk).name == "team/app"


@pytest.mark.django_db
def test_a_temporary_dns_failure_is_a_503_worth_retrying(api, monkeypatch) -> None:
    def failing_getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", failing_getaddrinfo)
    response = api.post("/api/repos", {"url": "https://example.org/team/app.git"}, format="json")
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "url_refused"
    assert "try again later" in error["message"]
    assert Repository.objects.count() == 0
