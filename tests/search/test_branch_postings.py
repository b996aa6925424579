"""Every branch's live generation has its own BM25 statistics and term postings, built in its
swap: a search of another branch than the default is ranked by the same engine, exactly, and
stays so when the default branch takes rows over; deleting the branch drops them."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.repo import Repo

from accounts.visibility import Viewer
from indexing.models import Chunk
from indexing.services.branches import delete_branch
from search.executor import SearchRequest
from search.models import ChunkFacetStat, TermBucket, TermPostings
from search.retrieval.fulltext import FulltextList, fulltext_search
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from tests.indexing.git_server import commit_files
from tests.indexing.real_run import reindex
from tests.search.test_branch_search import RELEASE, _two_branches

pytestmark = pytest.mark.django_db


def fulltext(query: str, branches: list[str], *, engine: bool = True) -> FulltextList:
    request = SearchRequest(query=query, branches=branches)
    repositories = scope_repositories(None, Viewer.everything(), branches)
    scope = build_scope_filter(resolve_scope(request), repositories)
    return fulltext_search(parse_query(query), scope, limit=8, cap=10**6, use_postings=engine)


def assert_ranked_as_every_match(found: FulltextList, every: FulltextList) -> None:
    assert "fallback" not in found.detail and found.detail["exact"] is True
    assert [cid for cid, _ in found.ranked] == [cid for cid, _ in every.ranked]
    assert [s for _, s in found.ranked] == pytest.approx([s for _, s in every.ranked], rel=1e-5)


def stats_generations(repository_id: object) -> set[int]:
    return {
        *ChunkFacetStat.objects.filter(repository_id=repository_id).values_list(
            "generation", flat=True
        ),
        *TermPostings.objects.filter(repository_id=repository_id).values_list(
            "generation", flat=True
        ),
        *TermBucket.objects.filter(repository_id=repository_id).values_list(
            "generation", flat=True
        ),
    }


def test_a_branch_is_ranked_by_its_own_postings_as_every_match_would(tmp_path: Path) -> None:
    repository, branch = _two_branches(tmp_path)
    assert stats_generations(repository.pk) == {repository.active_generation, branch.generation}
    # the branch's facet counts cover its own chunks and those it shares with the default
    counted = sum(
        ChunkFacetStat.objects.filter(
            repository=repository, generation=branch.generation
        ).values_list("chunks", flat=True)
    )
    assert counted == branch.chunk_count > 0

    queries = ("patch release checksum", "acquire pool", "retry backoff attempts")
    for query in queries:
        found = fulltext(query, ["release/1.0"])
        assert_ranked_as_every_match(found, fulltext(query, ["release/1.0"], engine=False))
        assert found.ranked, query
    hotfix = fulltext("patch release checksum", ["release/1.0"]).ranked[0][0]
    assert Chunk.objects.get(pk=hotfix).path == "hotfix.py"

    # The default branch now has the hotfix too: it takes the branch's rows over (the branch
    # shares them from then on). The chunk ids do not change, so the branch's lists stay true.
    repo = Repo(str(tmp_path / "demo.git"))
    commit_files(
        repo, RELEASE, message="main takes the hotfix", parent=repo.refs[b"refs/heads/main"]
    )
    repository = reindex(repository)
    assert Chunk.objects.get(pk=hotfix).generation == repository.active_generation
    for query in queries:
        found = fulltext(query, ["release/1.0"])
        assert_ranked_as_every_match(found, fulltext(query, ["release/1.0"], engine=False))
    assert fulltext("patch release checksum", ["release/1.0"]).ranked[0][0] == hotfix
    assert stats_generations(repository.pk) == {repository.active_generation, branch.generation}

    # Both branches at once: each chunk they share is in both branches' lists, and is one
    # result, ranked as every match would be over the two branches' chunks.
    for query in queries:
        both = fulltext(query, ["*"])
        assert_ranked_as_every_match(both, fulltext(query, ["*"], engine=False))
        assert len({cid for cid, _ in both.ranked}) == len(both.ranked) > 0
    assert fulltext("patch release checksum", ["*"]).ranked[0][0] == hotfix

    delete_branch(branch)
    assert stats_generations(repository.pk) == {repository.active_generation}


def test_a_branch_without_statistics_is_found_and_repaired_by_the_doctor(tmp_path: Path) -> None:
    # As after the upgrade to search.0007: branches indexed before it have no statistics.
    from indexing.services.doctor import examine

    repository, branch = _two_branches(tmp_path)
    for model in (ChunkFacetStat, TermPostings, TermBucket):
        model.objects.filter(repository=repository, generation=branch.generation).delete()
    fallback = fulltext("patch release checksum", ["release/1.0"])
    assert fallback.detail["fallback"] == "statistics missing (counted on the fly)"

    found = [f for f in examine().findings if f.kind == "missing_search_stats"]
    assert [(f.repository, f.repaired) for f in found] == [("acme/demo", False)]
    examine(repair=True)
    assert stats_generations(repository.pk) == {repository.active_generation, branch.generation}
    repaired = fulltext("patch release checksum", ["release/1.0"])
    assert_ranked_as_every_match(
        repaired, fulltext("patch release checksum", ["release/1.0"], engine=False)
    )
    assert [f for f in examine().findings if f.kind == "missing_search_stats"] == []
