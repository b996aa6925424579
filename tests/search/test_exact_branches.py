"""Exact and regex search on other branches (``branch:NAME`` / ``branches``): a branch's files are
those its generation owns plus those it shares with the default branch, and the answers equal
``git grep`` at that branch's commit in every read plan; ``branch:*`` searches every indexed
branch, each hit naming its branch and carrying that branch's commit and permalink."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from indexing.models import IndexedBranch, Repository
from indexing.services.branches import set_branches
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, run_job
from tests.search.test_exact_search import READ_PLANS, all_pages, force_plan, git_grep, ours, post

pytestmark = pytest.mark.django_db

MAIN = {
    "pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()\n",
    "retry.py": "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n"
    "        fn()\n",
    "old/legacy.py": "def legacy_retry(fn):\n    return fn()  # retry once\n",
    "docs/notes.md": "# Notes\n\nThe pool will retry a connection twice.\n",
}
RELEASE = {
    "pool.py": MAIN["pool.py"],  # shared with main: stored once
    "docs/notes.md": MAIN["docs/notes.md"],
    "retry.py": "def retry_with_backoff(fn, attempts, delay):\n    for _ in range(attempts):\n"
    "        sleep(delay)  # retry after a pause\n        fn()\n",  # edited on the branch
    "hotfix.py": "def patch_release_checksum(payload):\n    return crc32(payload)  # retry-safe\n",
}  # old/legacy.py deleted on the branch


@pytest.fixture
def two_branches(tmp_path: Path) -> tuple[Path, Repository, IndexedBranch]:
    path = tmp_path / "demo.git"
    repo = init_bare_repo(str(path))
    first = commit_files(repo, MAIN, message="main")
    commit_files(repo, RELEASE, branch="release/1.0", message="release", parent=first)
    repository = index(path)
    set_branches(repository, ["release/1.0"])
    branch = IndexedBranch.objects.get(repository=repository)
    job = run_job(repository.jobs.get(branch=branch))
    assert job.state == "done", (job.error, job.failures)
    branch.refresh_from_db()
    assert branch.shared_file_count >= 2  # pool.py and docs/notes.md are main's rows
    return path, Repository.objects.get(pk=repository.pk), branch


CASES = [
    ('"retry"', ["-i", "-F"], "retry"),
    ('"fn()" case:yes', ["-F"], "fn()"),
    ("/retr(y|ies)/", ["-i", "-E"], "retr(y|ies)"),
    ("/def [a-z_]+\\(/", ["-i", "-E"], "def [a-z_]+\\("),
    ('"pool"', ["-i", "-F"], "pool"),
]


def test_branch_answers_equal_git_grep_at_the_branch_commit(
    two_branches: tuple[Path, Repository, IndexedBranch],
    client: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every read plan of ``test_exact_search`` (forced), every case, four filters (one index
    for them all: the machine is shared)."""
    path, repository, branch = two_branches
    for plan in READ_PLANS:
        with monkeypatch.context() as patch:
            force_plan(patch, plan)
            for query, flags, pattern in CASES:
                for filtered, commit in (
                    (f"branch:release/1.0 {query}", branch.last_indexed_commit),
                    (f"branch:release/* {query}", branch.last_indexed_commit),
                    (query, repository.last_indexed_commit),
                    (f"branch:main {query}", repository.last_indexed_commit),
                ):
                    hits, pages = all_pages(client, {"query": filtered, "limit": 2})
                    expected = git_grep(path, commit, flags, pattern)
                    where = (plan, filtered)
                    assert expected or "fn()" in query, where
                    assert ours(hits) == expected, where
                    files = sorted({p for p, _, _ in expected})
                    assert [h["file_path"] for h in hits] == files, where
                    assert {h["commit"] for h in hits} <= {commit}, where
                    assert all(
                        p["total"] == len(files) and p["match_total"] == len(expected)
                        for p in pages
                    ), where


def test_every_branch_and_what_each_hit_names(
    two_branches: tuple[Path, Repository, IndexedBranch], client: Client
) -> None:
    path, repository, branch = two_branches
    main_commit, release_commit = repository.last_indexed_commit, branch.last_indexed_commit

    # A file only on the branch is found only with the filter; one deleted there only without.
    assert post(client, {"query": '"patch_release_checksum"'})[1]["results"] == []
    status, on_branch = post(client, {"query": 'branch:release/1.0 "patch_release_checksum"'})
    assert status == 200, on_branch
    (hit,) = on_branch["results"]
    assert (hit["file_path"], hit["branch"], hit["commit"]) == (
        "hotfix.py",
        "release/1.0",
        release_commit,
    )
    assert hit["indexed_at"] is not None
    assert release_commit in hit["url"]
    assert post(client, {"query": 'branch:release/1.0 "legacy_retry"'})[1]["results"] == []
    assert [h["file_path"] for h in post(client, {"query": '"legacy_retry"'})[1]["results"]] == [
        "old/legacy.py"
    ]

    # branch:* (and the API's branches field): both branches, a shared file once for each.
    for body in (
        {"query": 'branch:* "retry"', "limit": 2},
        {"query": '"retry"', "branches": ["*"], "limit": 2},
    ):
        hits, _ = all_pages(client, body)
        found = {(h["branch"], h["file_path"], h["commit"]) for h in hits}
        expected = {
            ("main", p, main_commit)
            for p, _, _ in git_grep(path, main_commit, ["-i", "-F"], "retry")
        } | {
            ("release/1.0", p, release_commit)
            for p, _, _ in git_grep(path, release_commit, ["-i", "-F"], "retry")
        }
        assert found == expected and len(hits) == len(expected)
        assert ("main", "docs/notes.md", main_commit) in found
        assert ("release/1.0", "docs/notes.md", release_commit) in found

    # Without a filter nothing changed: every hit is on the default branch.
    hits, _ = all_pages(client, {"query": '"retry"', "limit": 10})
    assert {h["branch"] for h in hits} == {"main"}

    # A hybrid search's count of exact matches counts on the branches it searched.
    for body, matches in (
        ({"query": "patch_release_checksum", "branches": ["release/1.0"]}, 1),
        ({"query": "branch:release/* patch_release_checksum"}, 1),
        ({"query": "patch_release_checksum"}, 0),
    ):
        status, answer = post(client, {**body, "use_vector": False})
        assert status == 200 and answer["mode"] == "hybrid", answer
        assert answer["exact_matches"] == matches, body

    # An unknown branch is a 404 naming it, in exact and regex search alike.
    for query in ('branch:nope "retry"', "branch:nope /retr[y]/"):
        status, body = post(client, {"query": query})
        assert status == 404, body
        assert body["error"]["code"] == "unknown_branch"


def test_symbol_and_file_name_search_on_branches(
    two_branches: tuple[Path, Repository, IndexedBranch], client: Client
) -> None:
    _, repository, branch = two_branches
    main_commit, release_commit = repository.last_indexed_commit, branch.last_indexed_commit

    def found(query: str, **body: Any) -> list[tuple[str, str, str]]:
        hits, _ = all_pages(client, {"query": query, "limit": 1, **body})
        for hit in hits:
            assert hit["commit"] in hit["url"]
        return [(h["branch"], h["file_path"], h["commit"]) for h in hits]

    # A definition only on the branch: found only with the filter, at the branch's commit.
    assert found("sym:patch_release_checksum") == []
    assert found("branch:release/1.0 sym:patch_release_checksum") == [
        ("release/1.0", "hotfix.py", release_commit)
    ]
    assert found("branch:release/1.0 sym:legacy_retry") == []
    # branch:* : a definition of each branch (the shared class too), each naming its branch.
    assert sorted(found("branch:* sym:ConnectionPool")) == [
        ("main", "pool.py", main_commit),
        ("release/1.0", "pool.py", release_commit),
    ]
    assert sorted(found("sym:retry_with_backoff", branches=["*"])) == [
        ("main", "retry.py", main_commit),
        ("release/1.0", "retry.py", release_commit),
    ]
    assert found("sym:retry_with_backoff") == [("main", "retry.py", main_commit)]

    # File names likewise (paged one hit at a time through the branches).
    assert found("type:file hotfix") == []
    assert found("branch:release/1.0 type:file hotfix") == [
        ("release/1.0", "hotfix.py", release_commit)
    ]
    assert found("branch:release/1.0 type:file legacy") == []
    assert sorted(found("branch:* type:file *.py")) == sorted(
        [("main", p, main_commit) for p in ("pool.py", "retry.py", "old/legacy.py")]
        + [("release/1.0", p, release_commit) for p in ("pool.py", "retry.py", "hotfix.py")]
    )
    status, body = post(client, {"query": "branch:* type:file *.py", "limit": 100})
    assert status == 200 and body["total"] == 6
    assert [h["file_path"] for h in post(client, {"query": "type:file *.py"})[1]["results"]] == [
        "pool.py",
        "retry.py",
        "old/legacy.py",
    ]

    for query in ("branch:nope sym:retry_with_backoff", "branch:nope type:file pool"):
        status, body = post(client, {"query": query})
        assert status == 404 and body["error"]["code"] == "unknown_branch", body


def test_the_symbols_api_takes_a_branch(
    two_branches: tuple[Path, Repository, IndexedBranch], client: Client
) -> None:
    _, repository, branch = two_branches

    def named(**params: str) -> list[tuple[str | None, str, str]]:
        answer = client.get("/api/symbols", params)
        assert answer.status_code == 200, answer.content
        return sorted(
            (hit.get("branch"), hit["path"], hit["commit"]) for hit in answer.json()["results"]
        )

    assert named(q="patch_release_checksum") == []
    assert named(q="patch_release_checksum", branch="release/1.0") == [
        ("release/1.0", "hotfix.py", branch.last_indexed_commit)
    ]
    assert named(q="ConnectionPool", branch="*") == [
        ("main", "pool.py", repository.last_indexed_commit),
        ("release/1.0", "pool.py", branch.last_indexed_commit),
    ]
    assert named(q="ConnectionPool", branch="main") == [
        ("main", "pool.py", repository.last_indexed_commit)
    ]
    unknown = client.get("/api/symbols", {"q": "ConnectionPool", "branch": "nope"})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "unknown_branch"


def test_the_mcp_find_symbol_tool_takes_a_branch(
    two_branches: tuple[Path, Repository, IndexedBranch],
) -> None:
    from search.mcp.navigation_tools import find_symbol
    from search.mcp.tools import ToolInputError

    _, repository, branch = two_branches
    assert find_symbol("patch_release_checksum")["definitions"] == []
    found = find_symbol("patch_release_checksum", branch="release/1.0")
    assert [(d["location"], d["branch"]) for d in found["definitions"]] == [
        ("hotfix.py:1-2", "release/1.0")
    ]
    assert found["commits"] == {f"{repository.name}@release/1.0": branch.last_indexed_commit}
    both = find_symbol("ConnectionPool", branch="*")["definitions"]
    assert sorted(d["branch"] for d in both) == ["main", "release/1.0"]
    for bad, code in (("nope", "unknown_branch"), ("  ", "invalid_branch")):
        with pytest.raises(ToolInputError) as refused:
            find_symbol("ConnectionPool", branch=bad)
        assert refused.value.payload["error"]["code"] == code
