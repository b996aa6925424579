"""Full-text and vector lists are built at the same time on two connections when they can be."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import transaction

import llm
from indexing.models import Repository
from indexing.services.vectors import embed_repository, space_for
from search.executor import SearchExecutor, SearchRequest
from tests import factories

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n        fn()",
    "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()",
    "def render_template(name, context):\n    return load(name).render(context)",
]


@pytest.fixture
def indexed(transactional_db) -> Repository:
    repository = factories.indexed_repository(
        "p/q", SOURCE, url="https://example.org/p/q.git", path="src/lib.py", symbol_prefix="f"
    )
    embedder = llm.get_embedder()
    embed_repository(repository, space_for(embedder), embedder.embed, batch_size=32)
    return repository


def vector_stage(result):  # type: ignore[no-untyped-def]
    return next(stage for stage in result.trace if stage.name == "vector")


def test_lists_are_built_concurrently_with_the_same_results(indexed) -> None:
    request = SearchRequest(query="retry a call with backoff", limit=4)
    concurrent = SearchExecutor().run(request)
    assert vector_stage(concurrent).status == "ran"
    assert vector_stage(concurrent).detail["concurrent_with_fulltext"] is True

    with transaction.atomic():  # an open transaction: another connection could not see its rows
        sequential = SearchExecutor().run(request)
    assert vector_stage(sequential).detail["concurrent_with_fulltext"] is False
    assert [h.chunk_id for h in concurrent.hits] == [h.chunk_id for h in sequential.hits]
    assert concurrent.hits[0].symbol == "f1"
    assert concurrent.total_vector_hits == sequential.total_vector_hits > 0


# Full text in groups of repositories at once (search.retrieval.fulltext.split_groups).

SPLIT_SOURCES = {
    "a/one": [
        "def retry_request(session, attempts):\n    return session.send(attempts)",
        "def close_connection(pool):\n    pool.release()\n    return pool",
        "def parse_header(line):\n    return line.split(':')",
    ],
    "b/two": [
        "def retry_upload(client, attempts):\n    return client.put(attempts, retry=True)",
        "def open_connection(pool):\n    return pool.acquire()",
    ],
    "c/three": [
        "def retry_forever(job):\n    while True:\n        job.retry()",
        "def connection_count(pool):\n    return len(pool.connections)",
        "def render_page(template):\n    return template.render()",
    ],
}


@pytest.fixture
def three_repositories(transactional_db) -> list[Repository]:
    return [
        factories.indexed_repository(name, sources, symbol_prefix=name[0])
        for name, sources in SPLIT_SOURCES.items()
    ]


def fulltext_run(repositories, query, minimum, monkeypatch):  # type: ignore[no-untyped-def]
    import search.retrieval.fulltext as fulltext

    monkeypatch.setattr(fulltext, "SPLIT_MIN_CHUNKS", minimum)
    # (the split is the rounds' way: lists kept in memory are ranked in one pass)
    monkeypatch.setattr(settings, "REPO_SEARCH_POSTINGS_MEMORY_MB", 0)
    result = SearchExecutor().run(
        SearchRequest(query=query, use_vector=False, limit=8, repo_ids=[r.pk for r in repositories])
    )
    stage = next(s for s in result.trace if s.name == "fulltext")
    return result, stage.detail["queries"][0]


def test_split_fulltext_gives_the_one_pass_ranking(three_repositories, monkeypatch) -> None:
    one, one_detail = fulltext_run(three_repositories, "retry the connection", 10**9, monkeypatch)
    split, split_detail = fulltext_run(three_repositories, "retry the connection", 1, monkeypatch)
    assert "parallel_groups" not in one_detail
    assert split_detail["parallel_groups"] == 2
    assert split_detail["exact"] is True
    ranked = [(h.chunk_id, h.bm25_score) for h in split.hits]
    assert ranked == [(h.chunk_id, h.bm25_score) for h in one.hits]
    # hits from every repository, not only one group's
    assert {h.repo_name for h in split.hits} == set(SPLIT_SOURCES)


def test_split_is_not_used_where_it_cannot_pay_or_cannot_see(
    three_repositories, monkeypatch
) -> None:
    import threading

    from search.retrieval import parallel

    # one token: decided in a round or two, one pass
    _, detail = fulltext_run(three_repositories, "retry", 1, monkeypatch)
    assert "parallel_groups" not in detail
    # an open transaction: another connection could not see its rows
    with transaction.atomic():
        _, detail = fulltext_run(three_repositories, "retry the connection", 1, monkeypatch)
    assert "parallel_groups" not in detail
    # the retrieval threads are busy with other searches
    release = threading.Event()
    blockers = [parallel.run_beside(release.wait) for _ in range(parallel.WORKERS - 1)]
    try:
        assert parallel.busy() >= parallel.WORKERS - 1
        _, detail = fulltext_run(three_repositories, "retry the connection", 1, monkeypatch)
        assert "parallel_groups" not in detail
    finally:
        release.set()
        for blocker in blockers:
            blocker.result(timeout=10)
    assert parallel.busy() == 0


def test_busy_counts_tasks_until_they_end_even_when_they_fail() -> None:
    from search.retrieval import parallel

    def fail() -> None:
        raise ValueError("boom")

    future = parallel.run_beside(fail)
    with pytest.raises(ValueError, match="boom"):
        future.result(timeout=10)
    assert parallel.run_beside(lambda: 7).result(timeout=10) == 7
    assert parallel.busy() == 0


def test_merge_top_k_orders_by_score_then_id_and_is_exact_only_if_every_part_is() -> None:
    from search.retrieval.postings import TopK, merge_top_k
    from search.retrieval.postings_bounds import Want

    wants = [Want(limit=3), Want(limit=2)]
    first = TopK(ranked=[[(5, 2.0), (9, 1.0)], [(5, 0.5)]], exact=[True, True], rounds=2)
    second = TopK(ranked=[[(4, 2.0), (1, 0.5)], [(7, 0.9), (8, 0.1)]], exact=[True, False])
    merged = merge_top_k([first, second], wants)
    assert merged.ranked == [[(4, 2.0), (5, 2.0), (9, 1.0)], [(7, 0.9), (5, 0.5)]]
    assert merged.exact == [True, False]
    assert merged.rounds == 2


# A hybrid answer's count of exact matches runs beside the search (search.router).


def test_an_identifiers_exact_matches_are_counted_beside_the_search(indexed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    import search.router as dispatch

    threads: list[str] = []
    count = dispatch.count_exact_matches

    def counting(*args):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return count(*args)

    monkeypatch.setattr(dispatch, "count_exact_matches", counting)
    call = dispatch.SearchCall(SearchRequest(query="parse_http_header", limit=4))
    beside = dispatch.run_search(call)
    with transaction.atomic():  # another connection could not see this transaction's rows
        inline = dispatch.run_search(call)
    assert threads[0].startswith("retrieval") and threads[1] == threading.current_thread().name
    assert beside.exact_matches == inline.exact_matches == 1
    assert beside.exact_matches_is_lower_bound is inline.exact_matches_is_lower_bound is False
    assert [h.chunk_id for h in beside.hybrid.hits] == [h.chunk_id for h in inline.hybrid.hits]
    assert beside.hybrid.hits[0].symbol == "f0"
    absent = dispatch.run_search(dispatch.SearchCall(SearchRequest(query="frobnicate_widget")))
    assert absent.exact_matches == 0  # counted beside too: nothing holds it
