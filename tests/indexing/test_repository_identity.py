"""A repository is the same repository whatever the spelling of its URL (issue 33 item 2): a
writer cannot add a restricted repository again as a public copy under another spelling or
another branch, and is told nothing about a restricted repository they may not see."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from dulwich.repo import Repo

from indexing.models import Repository
from indexing.services.repositories import HIDDEN_DUPLICATE, add_repository
from indexing.source_identity import source_identity
from tests.accounts_support import make_account, token_client
from tests.refusals import error_of

pytestmark = pytest.mark.django_db

VAULT = "https://github.com/acme/vault.git"

SPELLINGS = [
    "https://github.com/acme/vault.git",
    "https://github.com/acme/vault",
    "https://github.com/acme/vault/",
    "https://github.com/acme/vault.git/",
    "http://github.com/acme/vault.git",
    "git://github.com/acme/vault",
    "https://GitHub.COM/acme/vault.git",
    "https://github.com/Acme/Vault",
    "https://www.github.com/acme/vault",
    "https://github.com:443/acme/vault",
    "https://github.com//acme//vault.git",
    "https://github.com/acme/%76ault",
]


def test_every_spelling_of_a_url_has_one_identity() -> None:
    assert {source_identity(url) for url in SPELLINGS} == {"github.com/acme/vault"}
    assert source_identity("https://git.example.org/Team/App.git") == source_identity(
        "http://git.example.org/team/app/"
    )
    # Different repositories stay different.
    others = [
        "https://github.com/acme/vault2",
        "https://github.com/other/vault",
        "https://gitlab.com/acme/vault",
        "https://github.com:8443/acme/vault",
    ]
    assert len({source_identity(url) for url in [VAULT, *others]}) == 5
    assert source_identity("file:///srv/git/app/.git") == source_identity("file:///srv/git/app")
    assert source_identity("file:///srv/git/app.git") != source_identity("file:///srv/git/app")


@pytest.fixture
def vault(public_dns: Any) -> Repository:
    """An administrator's repository restricted to ``team-a``."""
    Group.objects.get_or_create(name="team-a")
    job = add_repository(VAULT, branch="main", visibility_groups=["team-a"])
    return job.repository


def _add(client: Any, url: str, branch: str | None = None) -> Any:
    body = {"url": url} | ({"branch": branch} if branch is not None else {})
    return client.post("/api/repos", body, format="json")


def test_no_spelling_and_no_branch_gives_an_outsider_a_public_copy(vault: Repository) -> None:
    outsider = token_client("write")
    answers = []
    for url in SPELLINGS:
        for branch in (None, "main", "dev", "release/1.0"):
            response = _add(outsider, url, branch)
            assert response.status_code == 409, (url, branch, response.content)
            answers.append(error_of(response))
    # One answer, whatever was asked: no name, id, branch or group of the restricted one.
    assert all(answer == answers[0] for answer in answers)
    assert answers[0] == {"code": "duplicate", "message": HIDDEN_DUPLICATE, "details": {}}
    for secret in ("vault", str(vault.pk), "team-a", "main", "restricted"):
        assert secret not in str(answers[0])
    assert Repository.objects.count() == 1


def test_a_member_is_pointed_at_the_repository_to_add_the_branch_to(vault: Repository) -> None:
    member = token_client("write", user=make_account("write", groups=["team-a"]))
    response = _add(member, "http://GitHub.com/acme/vault/", "dev")
    assert response.status_code == 409
    error = error_of(response)
    assert error["details"] == {
        "repository_id": str(vault.pk),
        "branch": "main",
        "add_branch": "dev",
    }
    assert "add it to that repository's branches" in error["message"]
    # The branch added that way is the restricted repository's own.
    patched = member.patch(f"/api/repos/{vault.pk}", {"branches": ["dev"]}, format="json")
    assert patched.status_code == 200, patched.content
    assert list(vault.indexed_branches.values_list("name", flat=True)) == ["dev"]
    assert Repository.objects.count() == 1


def test_an_administrators_new_branch_copy_keeps_the_restriction(vault: Repository) -> None:
    admin = token_client("admin")
    response = _add(admin, "https://github.com/Acme/Vault", "dev")
    assert response.status_code == 202, response.content
    copy = Repository.objects.get(pk=response.json()["id"])
    assert list(copy.visible_to_groups.values_list("name", flat=True)) == ["team-a"]
    # Still the same repository and branch twice is refused, to the administrator too.
    again = _add(admin, "git://github.com/acme/vault.git", "dev")
    assert again.status_code == 409
    assert error_of(again)["details"]["repository_id"] == str(copy.pk)


def test_public_repositories_still_take_another_branch_copy(public_dns: Any) -> None:
    writer = token_client("write")
    first = _add(writer, "https://github.com/acme/shop.git")
    assert first.status_code == 202
    assert _add(writer, "https://github.com/ACME/shop", "dev").status_code == 202
    again = _add(writer, "http://github.com/acme/shop/", "dev")
    assert again.status_code == 409
    assert error_of(again)["details"]["branch"] == "dev"


def test_local_path_spellings_are_one_repository(tmp_path: Path, settings: Any) -> None:
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    work = tmp_path / "app"
    Repo.init(str(work), mkdir=True).close()
    link = tmp_path / "link"
    os.symlink(work, link)
    Group.objects.get_or_create(name="team-a")
    add_repository(str(work), branch="main", visibility_groups=["team-a"])
    outsider = token_client("write")
    for spelling in (
        str(work),
        f"{work}/",
        f"{work}/.git",
        f"{work}/.git/",
        f"file://{work}",
        f"file://{work}/.git",
        str(link),
        f"{link}/.git",
        f"{tmp_path}/./app",
    ):
        for branch in (None, "main", "other"):
            response = _add(outsider, spelling, branch)
            assert response.status_code == 409, (spelling, response.content)
            assert error_of(response)["message"] == HIDDEN_DUPLICATE
    assert Repository.objects.count() == 1
