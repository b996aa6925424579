"""The SQL statements one search runs do not grow with the number of repositories.

A per-repository query inside the search path (one ``IndexJob`` lookup per repository per
search once went unnoticed and tripled hybrid latency at 91 repositories) shows up here as a
count that rises when repositories are added.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import llm
from indexing.services.vectors import embed_repository, space_for
from search.executor import SearchExecutor, SearchRequest
from tests import factories

pytestmark = pytest.mark.django_db

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n        fn()",
    "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()",
]
MODES = {
    "full-text": {"use_bm25": True, "use_vector": False},
    "vector": {"use_bm25": False, "use_vector": True},
    "hybrid": {"use_bm25": True, "use_vector": True},
}


@pytest.fixture(autouse=True)
def _model_config_stays_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model configuration is re-read once a second; on a loaded machine that second can
    fall between the warm-up and the counted search (an extra statement that is not per row)."""
    import llm.config

    monkeypatch.setattr(llm.config, "CHECK_INTERVAL_SECS", 3600.0)


def _add_embedded_repositories(first: int, count: int) -> None:
    embedder = llm.get_embedder()
    space = space_for(embedder)
    for number in range(first, first + count):
        repository = factories.indexed_repository(
            f"count/r{number}", SOURCE, url=f"https://example.org/count/r{number}.git"
        )
        embed_repository(repository, space, embedder.embed, batch_size=32)


def _statements(mode: str) -> tuple[int, int]:
    request = SearchRequest(query="connection pool acquire", limit=5, **MODES[mode])
    executor = SearchExecutor()
    executor.run(request)  # warm: model loading and settings caches are not the point
    with CaptureQueriesContext(connection) as captured:
        result = executor.run(request)
    return len(captured.captured_queries), len(result.hits)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_statements_per_search_do_not_grow_with_repositories(mode: str) -> None:
    _add_embedded_repositories(0, 1)
    one, hits_one = _statements(mode)
    _add_embedded_repositories(1, 7)
    eight, hits_eight = _statements(mode)
    assert hits_one and hits_eight > hits_one  # the other repositories were really searched
    assert eight == one, f"{mode}: {one} statements with 1 repository, {eight} with 8"


def test_full_text_reads_the_candidates_facts_once_and_ranks_as_when_read_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The full-text pass reads what the ranking signals need of its chunks in the statement
    that checks them against the scope, so fusion reads no facts of its own; the hits are the
    same as when fusion reads them. Where the scope filters by nothing but the test/doc flags
    the lists carry, facts read once are kept: the next search of those chunks reads none."""
    from search.retrieval import fulltext
    from search.retrieval.postings_memory import forget_facts

    _add_embedded_repositories(0, 3)
    request = SearchRequest(query="connection pool acquire", limit=5, **MODES["full-text"])
    executor = SearchExecutor()
    executor.run(request)
    forget_facts()
    with CaptureQueriesContext(connection) as captured:
        together = executor.run(request)
    reads = [q["sql"] for q in captured.captured_queries if "c.end_line - c.start_line" in q["sql"]]
    assert len(reads) == 1  # the scope check of the full-text pass, nothing in fusion
    with CaptureQueriesContext(connection) as captured:
        kept = executor.run(request)
    assert [q for q in captured.captured_queries if "c.end_line - c.start_line" in q["sql"]] == []
    assert len(captured.captured_queries) == 2  # the scope, then the hits
    assert [(h.chunk_id, h.combined_score) for h in kept.hits] == [
        (h.chunk_id, h.combined_score) for h in together.hits
    ]
    filtered = SearchRequest(query="connection pool acquire", limit=5, languages=["python"],
                             **MODES["full-text"])  # fmt: skip
    with CaptureQueriesContext(connection) as captured:
        executor.run(filtered)
    reads = [q for q in captured.captured_queries if "c.end_line - c.start_line" in q["sql"]]
    assert len(reads) == 1  # a language filter is not in the lists: checked in the database

    original = fulltext.fulltext_search

    def without_facts(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = original(*args, **kwargs)
        found.facts = {}
        return found

    monkeypatch.setattr("search.executor.fulltext_search", without_facts)
    forget_facts()
    with CaptureQueriesContext(connection) as captured:
        apart = executor.run(request)
    reads_apart = [q for q in captured.captured_queries if "c.end_line - c.start_line" in q["sql"]]
    assert len(reads_apart) == 2  # the scope check, then fusion's own
    assert together.hits and [(h.chunk_id, h.combined_score) for h in together.hits] == [
        (h.chunk_id, h.combined_score) for h in apart.hits
    ]


def test_hits_are_read_for_the_first_limit_live_candidates_and_a_gone_one_is_filled_in() -> None:
    from accounts.visibility import Viewer
    from indexing.models import Chunk
    from search.ranking.fusion import FusedCandidate
    from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories

    _add_embedded_repositories(0, 2)
    live = list(Chunk.objects.order_by("id").values_list("id", flat=True))
    gone = max(live) + 1000  # no such chunk any more (a swapped-out generation's, say)
    candidates = [FusedCandidate(cid, 1.0 / (i + 1)) for i, cid in enumerate([gone, *live])]
    request = SearchRequest(query="pool", limit=2)
    scope = build_scope_filter(resolve_scope(request), scope_repositories(None, Viewer()))
    with CaptureQueriesContext(connection) as captured:
        hits = SearchExecutor._hydrate(request, candidates, scope)
    assert sorted(hits) == live[:2]  # the gone one's place taken by the next
    assert len(captured.captured_queries) == 2  # the first two, then one more for the gap
    reranked = SearchExecutor._hydrate(
        SearchRequest(query="pool", limit=2, use_rerank=True), candidates, scope
    )
    assert sorted(reranked) == sorted(live)  # the rerank reads every candidate
