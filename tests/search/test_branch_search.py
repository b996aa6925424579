"""Searching other branches: the default branch by default, a branch (or glob, or every branch)
on request through the executor, the API's ``branches`` field, the query language's
``branch:`` and the MCP tool's ``branch``; each hit names its branch and that branch's commit
and index time, and a chunk stored once for two branches is one hit listing both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexing.models import IndexedBranch, Repository
from indexing.services.branches import delete_branch, set_branches
from search.executor import SearchExecutor, SearchRequest
from search.mcp import tools
from search.mcp.tools import ToolInputError
from search.retrieval.scope import UnknownBranch
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, run_job

pytestmark = pytest.mark.django_db

MAIN = {
    "pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()\n",
    "retry.py": "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n"
    "        fn()\n",
}
RELEASE = {
    **MAIN,
    "hotfix.py": "def patch_release_checksum(payload):\n    return crc32(payload)\n",
}


def _two_branches(tmp_path: Path) -> tuple[Repository, IndexedBranch]:
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
    return Repository.objects.get(pk=repository.pk), branch


def _search(query: str, **fields: Any) -> list[Any]:
    return SearchExecutor().run(SearchRequest(query=query, limit=5, **fields)).hits


def test_default_branch_unless_asked_and_hits_name_their_branch(tmp_path: Path) -> None:
    repository, branch = _two_branches(tmp_path)

    default = _search("patch release checksum", use_vector=False)
    assert all(hit.file_path != "hotfix.py" for hit in default)

    on_release = _search("patch release checksum", branches=["release/*"])
    top = on_release[0]
    assert (top.file_path, top.branch, top.branches) == (
        "hotfix.py",
        "release/1.0",
        ["release/1.0"],
    )
    assert top.commit == branch.last_indexed_commit != repository.last_indexed_commit
    assert top.indexed_at == branch.last_indexed_at

    # The pool class is stored once for both branches: one hit per chunk, naming both.
    everywhere = _search("ConnectionPool acquire", branches=["*"], use_vector=False)
    pool = [hit for hit in everywhere if hit.file_path == "pool.py"]
    assert pool and len({hit.chunk_id for hit in everywhere}) == len(everywhere)
    for hit in pool:
        assert hit.branches == ["main", "release/1.0"] and hit.branch == "main"
        assert hit.commit == repository.last_indexed_commit

    with pytest.raises(UnknownBranch):
        _search("pool", branches=["nope"])

    # Deleting the branch leaves the default branch searchable and the branch unknown.
    delete_branch(branch)
    assert _search("ConnectionPool acquire", use_vector=False)[0].file_path == "pool.py"
    with pytest.raises(UnknownBranch):
        _search("patch release checksum", branches=["release/1.0"])


def test_api_query_language_and_mcp_take_a_branch(tmp_path: Path, client: Any) -> None:
    _two_branches(tmp_path)

    answer = client.post(
        "/api/search",
        {"query": "patch release checksum", "branches": ["release/1.0"]},
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    first = answer.json()["results"][0]
    assert (first["file_path"], first["branch"]) == ("hotfix.py", "release/1.0")
    assert first["branches"] == ["release/1.0"]

    typed = client.post(
        "/api/search",
        {"query": "branch:release/1.0 patch release checksum"},
        content_type="application/json",
    )
    assert typed.status_code == 200, typed.content
    assert typed.json()["results"][0]["branch"] == "release/1.0"

    unknown = client.post(
        "/api/search",
        {"query": "pool", "branches": ["feature/none"]},
        content_type="application/json",
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "unknown_branch"
    assert unknown.json()["error"]["details"] == {"branches": ["feature/none"]}
    misspelt = client.post(
        "/api/search", {"query": "pool branch:relaese/1.0"}, content_type="application/json"
    )
    assert misspelt.status_code == 404
    assert misspelt.json()["error"] == {
        "code": "unknown_branch",
        "message": "no indexed repository is on branch:relaese/1.0 — did you mean"
        " branch:release/1.0?",
        "details": {
            "branches": ["relaese/1.0"],
            "suggestions": ["release/1.0"],
            "suggestion": "release/1.0",
        },
    }

    from accounts.visibility import Viewer

    mcp = tools.search_code("patch release checksum", branch="release/1.0", viewer=Viewer())
    assert mcp["hits"][0]["location"].startswith("hotfix.py:")
    assert mcp["hits"][0]["branch"] == "release/1.0"
    assert "acme/demo@release/1.0" in mcp["indexed"]
    with pytest.raises(ToolInputError) as refused:
        tools.search_code("pool", branch="feature/none", viewer=Viewer())
    assert refused.value.payload["error"]["code"] == "unknown_branch"
