"""Full-text and vector lists are built at the same time on two connections when they can be."""

from __future__ import annotations

import pytest
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


def test_busy_counts_tasks_until_they_end_even_when_they_fail() -> None:
    from search.retrieval import db

    def fail() -> None:
        raise ValueError("boom")

    future = db.run_beside(fail)
    with pytest.raises(ValueError, match="boom"):
        future.result(timeout=10)
    assert db.run_beside(lambda: 7).result(timeout=10) == 7
    assert db.busy() == 0


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
