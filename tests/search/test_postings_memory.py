"""Term postings kept between searches (``search.retrieval.postings_cache`` and
``postings_memory``), in the host's files or in a process's memory: the same ranking as ranking
every match, no list read twice, nothing served stale after a rebuild, scope filters that drop the
best chunks, lists too large to keep in memory, and the fallback when lists cannot be read. The
files themselves, across processes: ``test_postings_files``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.visibility import Viewer
from search.executor import SearchRequest
from search.retrieval import postings_cache
from search.retrieval.fulltext import FulltextList, fulltext_search
from search.retrieval.postings_cache import ListCache, TermList
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db


def chunk(path: str, symbol: str, body: str, **flags: bool) -> SourceDoc:
    return SourceDoc(path, [Piece(f"def {symbol}():\n    {body}\n", symbol)], **flags)  # type: ignore[arg-type]


def fulltext(
    query: str, *, limit: int = 6, use_postings: bool = True, **scope: Any
) -> FulltextList:
    request = SearchRequest(query=query, **scope)
    found = build_scope_filter(
        resolve_scope(request), scope_repositories(None, Viewer.everything())
    )
    return fulltext_search(parse_query(query), found, limit=limit, cap=10**6,
                           use_postings=use_postings)  # fmt: skip


def same_ranking(one: FulltextList, other: FulltextList, rel: float = 1e-9) -> None:
    """Same chunks in the same order, with the same scores (``ts_rank_cd``, which the path that
    ranks every match uses, computes in float4: ``rel=1e-5`` for it)."""
    assert [cid for cid, _ in one.ranked] == [cid for cid, _ in other.ranked]
    assert [s for _, s in one.ranked] == pytest.approx([s for _, s in other.ranked], rel=rel)


def corpus() -> None:
    bodies = [
        "session = open_session(user) or refresh(session)",
        "if session.expired: return refresh(session, user)",
        "user = session.user; token = session.token",
        "return token",
        "session session session",
        "refresh_token(user, token, expires)",
    ]
    docs = [chunk(f"auth/m{i}.py", f"fn_{i}", body) for i, body in enumerate(bodies)]
    docs.append(chunk("tests/test_auth.py", "test_refresh", "session refresh", is_test=True))
    indexed_repository("memory-a", docs)
    indexed_repository("memory-b", [*docs[2:], chunk("b.py", "only_b", "refresh session token")])


def test_a_second_search_reads_no_list_and_ranks_as_every_match(settings) -> None:  # type: ignore[no-untyped-def]
    corpus()
    for query in ("session refresh", "user token", "refresh token expires"):
        for where in (None, "off"):  # the host's files, then this process's memory
            settings.REPO_SEARCH_POSTINGS_DIR = where
            settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
            postings_cache.cache().clear()
            first, second = fulltext(query), fulltext(query)
            assert "fallback" not in first.detail and first.detail["lists_loaded"] > 0, query
            assert "fallback" not in second.detail and second.detail["lists_loaded"] == 0, query
            assert first.ranked == second.ranked and first.ranked
        settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 0  # nothing kept: read for each search
        unkept = [fulltext(query), fulltext(query)]
        assert [u.detail["lists_loaded"] > 0 for u in unkept] == [True, True]
        same_ranking(second, unkept[1])
        same_ranking(second, fulltext(query, use_postings=False), rel=1e-5)  # every match


def test_a_search_from_memory_runs_fewer_statements(settings) -> None:  # type: ignore[no-untyped-def]
    corpus()
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    fulltext("session refresh token")
    with CaptureQueriesContext(connection) as warm:
        fulltext("session refresh token")
    settings.REPO_SEARCH_POSTINGS_DIR = "off"
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 0
    with CaptureQueriesContext(connection) as cold:
        fulltext("session refresh token")
    reads_lists = ["p.postings" in q["sql"] for q in warm.captured_queries]
    assert not any(reads_lists) and any("p.postings" in q["sql"] for q in cold.captured_queries)
    assert len(warm.captured_queries) < len(cold.captured_queries)


def test_statistics_rebuilt_for_the_same_generation_are_not_served_stale(settings) -> None:  # type: ignore[no-untyped-def]
    from indexing.models import Chunk
    from indexing.services.search_stats import refresh_search_stats

    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    repository = indexed_repository(
        "rebuilt", [chunk("a.py", "first", "lantern"), chunk("b.py", "second", "candle")]
    )
    assert [cid for cid, _ in fulltext("lantern").ranked] == [
        Chunk.objects.get(repository=repository, symbol="first").pk
    ]
    second = Chunk.objects.get(repository=repository, symbol="second")
    with connection.cursor() as cursor:  # the same generation's text changes, and is rebuilt
        cursor.execute(
            "UPDATE indexing_chunk SET search_vector = to_tsvector('simple', 'lantern lantern')"
            " WHERE id = %s",
            [second.pk],
        )
    refresh_search_stats(repository.pk)
    found = fulltext("lantern")
    assert found.detail["lists_loaded"] > 0  # a new build: its lists read again
    assert found.ranked[0][0] == second.pk


def test_a_path_filter_that_drops_the_best_chunks_still_gives_its_top_k(settings) -> None:  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    docs = [
        chunk(f"vendor/v{i}.py", f"vendored_{i}", "parse parse parse header") for i in range(40)
    ]
    docs += [chunk(f"src/s{i}.py", f"own_{i}", "parse " + "x " * i + "header") for i in range(3)]
    indexed_repository("filtered", docs)
    found = fulltext("parse header", limit=2, path_globs=["src/**"])
    assert "fallback" not in found.detail and found.detail["chunks_checked"] > 2  # looked deeper
    every = fulltext("parse header", limit=2, path_globs=["src/**"], use_postings=False)
    same_ranking(found, every, rel=1e-5)
    assert len(found.ranked) == 2


def test_lists_larger_than_half_the_memory_are_served_from_the_files(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    corpus()
    small = ListCache(budget=2 * postings_cache.ENTRY_OVERHEAD)
    monkeypatch.setattr(postings_cache, "cache", lambda: small)
    settings.REPO_SEARCH_POSTINGS_DIR = "off"  # in memory only: they serve their search only
    found = fulltext("session refresh")
    assert "fallback" not in found.detail and found.detail["exact"] is True
    assert found.ranked and len(small) == 0  # nothing kept that would push out the rest
    again = fulltext("session refresh")
    assert again.detail["lists_loaded"] > 0 and again.ranked == found.ranked
    same_ranking(found, fulltext("session refresh", use_postings=False), rel=1e-5)
    settings.REPO_SEARCH_POSTINGS_DIR = None  # in the host's files: read once, from them after
    assert fulltext("session refresh").detail["lists_loaded"] > 0
    small.clear()
    from_files = fulltext("session refresh")
    assert from_files.detail["lists_loaded"] == 0 and from_files.ranked == found.ranked


def test_the_cache_drops_the_least_recently_used_lists_past_its_budget() -> None:
    def term_list(records: int) -> TermList:
        return TermList.of(np.arange(records, dtype=np.uint32), np.zeros(records, np.uint32), 1)

    size = term_list(100).nbytes
    store = ListCache(budget=3 * size)
    keys = [(0, 1, 1, f"t{i}") for i in range(4)]
    store.put_many({keys[0]: term_list(100), keys[1]: term_list(100), keys[2]: term_list(100)})
    assert store.get(keys[0])  # used: now the most recent
    store.put(keys[3], term_list(100))
    assert set(store.get_many(keys)) == {keys[0], keys[2], keys[3]}  # keys[1] was the oldest
    assert store.used == 3 * size
    store.put(keys[0], term_list(100))  # replaced, not counted twice
    assert store.used == 3 * size and len(store) == 3


def test_lists_that_cannot_be_read_whole_are_ranked_by_the_fallback(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from django.db import OperationalError

    corpus()
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64

    def timed_out(*_args):  # type: ignore[no-untyped-def]
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(postings_cache, "_load", timed_out)
    found = fulltext("session refresh")
    assert found.detail["fallback"] == "posting lists not read whole"
    monkeypatch.undo()
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    kept = fulltext("session refresh")  # the next search reads them (a timeout is not remembered)
    assert "fallback" not in kept.detail and kept.detail["lists_loaded"] > 0
    same_ranking(kept, found, rel=1e-5)  # the fallback ranked every match (under its cap)


def test_the_warm_up_builds_the_loops_a_search_runs():
    """The server ranks a made-up pass at start (in a process of its own here, so nothing else
    compiled before it); a search must run loops of the very types the warm-up built, or the
    first search would still wait ~2 s for a new specialisation."""
    import json
    import os
    import subprocess
    import sys

    from search.retrieval.postings_kernels import accumulate, offer

    script = (
        "import django, json; django.setup()\n"
        "from search.retrieval.postings_memory import warm_up\n"
        "from search.retrieval.postings_kernels import accumulate, offer\n"
        "ranked = warm_up()\n"
        "print(json.dumps([[ids for ids, _s in ranked],"
        " [str(s) for s in accumulate.signatures], [str(s) for s in offer.signatures]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=os.environ.copy(), check=True, timeout=300)  # fmt: skip
    ranked, warm_accumulate, warm_offer = json.loads(out.stdout.strip().splitlines()[-1])
    # the made-up list: chunks 1 and 4 (not tests), 6 (a test); 4 is dead
    assert ranked == [[1], [6]]
    corpus()
    found = fulltext("session refresh")
    assert "fallback" not in found.detail and found.ranked
    assert {str(s) for s in accumulate.signatures} <= set(warm_accumulate)
    assert {str(s) for s in offer.signatures} <= set(warm_offer)


def test_chunk_ids_spread_far_apart_rank_without_a_buffer_as_long_as_their_range(settings) -> None:  # type: ignore[no-untyped-def]
    """Ids outlive re-indexing: after months of other repositories' indexing, a file that did
    not change keeps its old chunk ids beside new ones tens of millions higher."""
    import tracemalloc

    from indexing.models import Chunk
    from indexing.services.search_stats import refresh_search_stats

    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    docs = [chunk(f"lamps/l{i}.py", f"lamp_{i}", "lantern " + "wick " * i) for i in range(6)]
    repository = indexed_repository("spread", [*docs, chunk("new.py", "fresh", "lantern lantern")])
    fresh = Chunk.objects.get(repository=repository, symbol="fresh")
    far = fresh.pk + 40_000_000
    with connection.cursor() as cursor:
        cursor.execute("UPDATE indexing_chunk SET id = %s WHERE id = %s", [far, fresh.pk])
    refresh_search_stats(repository.pk)

    fulltext("lantern wick")  # the lists read into memory, the compiled loops loaded
    tracemalloc.start()
    try:
        found = fulltext("lantern wick")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "fallback" not in found.detail and found.detail["lists_loaded"] == 0
    assert far in [cid for cid, _ in found.ranked]
    same_ranking(found, fulltext("lantern wick", use_postings=False), rel=1e-5)
    assert peak < 8 * 2**20  # a buffer over the range would take 40 M slots: ~840 MB
