"""BM25's statistics of a generation exist the moment it goes live: a search run right after a
re-index's swap (before anything else the job does) ranks from stored statistics, not from
counts made on the fly, and sees the new generation's words and sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import indexing.services.stages.fetch_and_index as fetch_and_index
from search.executor import SearchExecutor, SearchRequest, SearchResult
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, reindex
from tests.search.corpus import no_chat

pytestmark = pytest.mark.django_db

FIRST = {
    "pool.py": "def acquire(pool):\n    return pool.pop()  # take a connection\n",
    "retry.py": "def retry(fn):\n    return fn()\n",
}
SECOND = {
    **FIRST,
    "quota.py": "def enforce_quota(tenant):\n    return tenant.quota_left > 0  # quota check\n",
}


def search(query: str) -> SearchResult:
    request = SearchRequest(query=query, use_vector=False)
    return SearchExecutor(chat=no_chat()).run(request)


def test_a_search_right_after_the_swap_ranks_from_stored_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "demo.git"
    repo = init_bare_repo(str(path))
    first = commit_files(repo, FIRST, message="first")
    repository = index(path)
    commit_files(repo, SECOND, message="second", parent=first, when=1_700_000_100)

    seen: list[SearchResult] = []
    real_swap = fetch_and_index.swap_branch_generation

    def swap_then_search(*args: Any, **kwargs: Any) -> Any:
        swapped = real_swap(*args, **kwargs)
        seen.append(search("quota tenant"))  # the first search to see the new generation
        return swapped

    monkeypatch.setattr(fetch_and_index, "swap_branch_generation", swap_then_search)
    reindex(repository)

    assert len(seen) == 1
    result = seen[0]
    assert [hit.file_path for hit in result.hits][:1] == ["quota.py"]
    queries = result.stage("fulltext").detail["queries"]  # type: ignore[union-attr]
    assert all("stats_computed_on_the_fly" not in query for query in queries), queries
