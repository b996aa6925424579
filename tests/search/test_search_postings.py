"""The exact BM25 top-k from the term postings: beyond any candidate cap, equal to ranking every
match, with the scope applied, and the postings rebuilt with each generation."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.visibility import Viewer
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.models import TermBucket, TermPostings
from search.retrieval.fulltext import FulltextList, fulltext_search
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from search.types import SearchTuning
from tests.search.corpus import Piece, SourceDoc, index_generation, indexed_repository, no_chat

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, params=["files", "memory", "database"])
def memory(request: pytest.FixtureRequest, settings: Any) -> str:
    """Every test three times: with the lists in the host's files every process maps (the
    default), in this process's memory (no files), and kept nowhere (each search reads its lists
    from the database)."""
    settings.REPO_SEARCH_POSTINGS_DIR = None if request.param == "files" else "off"
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 0 if request.param == "database" else 64
    return str(request.param)


def search(query: str, **options: object) -> SearchResult:
    request = SearchRequest(query=query, use_vector=False, **options)  # type: ignore[arg-type]
    return SearchExecutor(chat=no_chat()).run(request)


def chunk(path: str, symbol: str, body: str, **flags: bool) -> SourceDoc:
    return SourceDoc(path, [Piece(f"def {symbol}():\n    {body}\n", symbol)], **flags)  # type: ignore[arg-type]


def stored_lists(
    repository: Any, term: str | None = None
) -> list[tuple[str, int, int, int, bytes]]:
    """(term, part, df, generation, list) of every list of a repository (or repository id),
    long or packed."""
    pk = getattr(repository, "pk", repository)
    found = [(r.term, r.part, r.df, r.generation, bytes(r.postings))
             for r in TermPostings.objects.filter(repository_id=pk)]  # fmt: skip
    for bucket in TermBucket.objects.filter(repository_id=pk):
        found += [(t, p, df, bucket.generation, bytes(v))
                  for t, p, df, v in zip(bucket.terms, bucket.parts, bucket.dfs, bucket.postings,
                                         strict=True)]  # fmt: skip
    return sorted(f for f in found if term is None or f[0] == term)


def fulltext(query: str, *, use_postings: bool, limit: int = 8) -> FulltextList:
    request = SearchRequest(query=query)
    scope = build_scope_filter(
        resolve_scope(request), scope_repositories(None, Viewer.everything())
    )
    return fulltext_search(
        parse_query(query), scope, limit=limit, cap=10**6, use_postings=use_postings
    )


def ranked(query: str, *, use_postings: bool, limit: int = 8) -> list[tuple[int, float]]:
    return fulltext(query, use_postings=use_postings, limit=limit).ranked


def test_the_best_chunk_is_found_however_late_it_was_stored() -> None:
    # Sixty chunks where "widget" is one word in many, stored first; the chunk that is about
    # widgets comes last. A capped candidate set in physical order would never see it.
    docs = [
        chunk(f"pkg/mod{i}.py", f"step_{i}", "widget = load(path, mode, size, retries, timeout)")
        for i in range(60)
    ]
    docs.append(chunk("pkg/widgets.py", "widgets", "widget(widget, widget, widget)"))
    indexed_repository("late", docs)
    result = search("widget", tuning=SearchTuning(fulltext_candidates=10), limit=5)
    assert [hit.symbol for hit in result.hits][:1] == ["widgets"]
    detail = result.stage("fulltext").detail["queries"][0]  # type: ignore[union-attr]
    assert detail["exact"] is True and detail["capped"] is True


def test_the_top_k_equals_ranking_every_match() -> None:
    bodies = [
        "cache = cache_get(key) or compute(key)",
        "if key in cache: return cache[key]",
        "cache.clear(); cache_get(None)",
        "timeout = cache_timeout(key, default)",
        "return compute(key, timeout=timeout)",
        "key = make_key(prefix, key, version)",
        "cache_get(make_key(key))",
        "for key in keys: cache.delete(key)",
        "return default",
        "cache cache cache key",
    ]
    docs = [chunk(f"cache/m{i}.py", f"fn_{i}", body) for i, body in enumerate(bodies)]
    indexed_repository("cache-a", docs)
    indexed_repository("cache-b", [*docs[3:], chunk("extra.py", "extra", "cache key timeout")])
    for query in ("cache key", "cache get timeout", "return key", "make key version"):
        exact = ranked(query, use_postings=True)
        every = ranked(query, use_postings=False)  # the fallback, uncapped: every match
        assert [cid for cid, _ in exact] == [cid for cid, _ in every], query
        assert [s for _, s in exact] == pytest.approx([s for _, s in every], rel=1e-5)


def test_scope_filters_apply_to_the_postings() -> None:
    indexed_repository(
        "scoped",
        [
            chunk("src/pool.py", "make_pool", "pool = Pool(size)"),
            chunk("tests/test_pool.py", "test_pool", "pool pool pool pool", is_test=True),
            chunk("docs/pool.py", "pool_doc", "pool pool pool", is_doc=True),
            chunk("lib/pool.go", "PoolGo", "pool pool"),
        ],
    )
    # The scope's own lists (left_out_weight 0: no left-out lists that may bring tests back).
    found = [hit.symbol for hit in search("pool", tuning=SearchTuning(left_out_weight=0.0)).hits]
    assert "test_pool" not in found and "pool_doc" not in found
    assert set(found) == {"make_pool", "PoolGo"}
    src_only = search("pool", path_globs=["src/**"], tuning=SearchTuning(left_out_weight=0.0)).hits
    assert [hit.symbol for hit in src_only] == ["make_pool"]
    assert "test_pool" in [hit.symbol for hit in search("pool", include_tests=True).hits]


def test_postings_follow_the_live_generation() -> None:
    repository = indexed_repository("gen", [chunk("a.py", "first", "alpha alpha beta")])
    rows = stored_lists(repository)
    assert {term: df for term, _p, df, _g, _v in rows if term in ("alpha", "beta")} == {
        "alpha": 1,
        "beta": 1,
    }
    index_generation(
        repository, [chunk("a.py", "first", "beta"), chunk("b.py", "second", "beta gamma")]
    )
    rows = stored_lists(repository)
    assert {generation for *_rest, generation, _v in rows} == {2}
    assert "alpha" not in {term for term, *_rest in rows}
    assert {term: df for term, _p, df, _g, _v in rows}["beta"] == 2
    assert [hit.symbol for hit in search("alpha").hits] == []
    assert {hit.symbol for hit in search("gamma beta").hits} == {"first", "second"}


def test_chunks_without_body_words_are_found_by_their_symbol() -> None:
    # Every chunk's body is punctuation: total length 0, averages fall back to 1.
    indexed_repository("empty-bodies", [SourceDoc("a.py", [Piece("((( )))", "lonely")])])
    result = search("lonely")
    assert [hit.symbol for hit in result.hits] == ["lonely"]
    assert result.hits[0].bm25_score and result.hits[0].bm25_score > 0


def test_a_restricted_repository_is_searched_only_by_its_group() -> None:
    from django.contrib.auth.models import Group

    from accounts.visibility import Viewer

    indexed_repository("open", [chunk("a.py", "open_ledger", "ledger = open_ledger(book)")])
    vault = indexed_repository(
        "vault", [chunk("b.py", "secret_ledger", "ledger ledger ledger ledger")]
    )
    group = Group.objects.create(name="ledger-team")
    vault.visible_to_groups.set([group])
    # The vault's chunk is the better match; a viewer outside the group must not see it.
    outsider = [hit.symbol for hit in search("ledger", viewer=Viewer()).hits]
    member = [hit.symbol for hit in search("ledger", viewer=Viewer(frozenset({group.pk}))).hits]
    assert outsider == ["open_ledger"]
    assert member[:1] == ["secret_ledger"] and "open_ledger" in member


def test_a_deleted_repository_leaves_no_postings_and_no_hits() -> None:
    kept = indexed_repository("kept", [chunk("a.py", "kept_parser", "parser = make_parser()")])
    gone = indexed_repository("gone", [chunk("a.py", "gone_parser", "parser parser parser")])
    assert stored_lists(gone)
    gone_id = gone.pk
    gone.delete()
    assert not stored_lists(gone_id)
    assert [hit.symbol for hit in search("parser").hits] == ["kept_parser"]
    assert [df for _t, _p, df, _g, _v in stored_lists(kept, "parser")] == [1]


def test_the_records_decode_to_the_chunks_they_were_built_from() -> None:
    import numpy as np

    from indexing.models import Chunk
    from indexing.postings_format import HEADER, RECORD, decode, list_base

    repository = indexed_repository(
        "decode",
        [
            chunk("src/a.py", "plain", "token"),
            chunk("tests/test_a.py", "in_test", "token token", is_test=True),
            chunk("docs/a.py", "in_doc", "token token token", is_doc=True),
        ],
    )
    rows = stored_lists(repository, "token")
    chunks = {c.pk: c for c in Chunk.objects.filter(repository=repository)}
    # one list per kind of chunk: code (part 0), tests (1), docs (2)
    assert [(part, df) for _t, part, df, _g, _v in rows] == [(0, 1), (1, 1), (2, 1)]
    for _term, part, _df, _generation, value in rows:
        ids, length, tf2, flags = decode(np.frombuffer(value[HEADER:], RECORD), list_base(value))
        assert len(ids) == 1
        stored = chunks[int(ids[0])]
        assert length[0] == stored.token_count
        assert flags[0] == part == int(stored.is_test) + 2 * int(stored.is_doc)
        # body words weigh 1 (tf2 2 per position): 1, 2 and 3 positions of "token"
        assert tf2[0] == 2 * {"plain": 1, "in_test": 2, "in_doc": 3}[stored.symbol]


def test_chunk_ids_of_one_generation_may_span_more_than_32_bits_and_fall_back() -> None:
    from django.db import connection

    from indexing.models import Chunk
    from indexing.services.search_stats import refresh_search_stats

    docs = [chunk(f"src/n{i}.py", f"near_{i}", "spool " * (i + 1)) for i in range(4)]
    repository = indexed_repository("wide-ids", [*docs, chunk("src/far.py", "far", "spool " * 9)])
    far = Chunk.objects.get(repository=repository, symbol="far")
    with connection.cursor() as cursor:  # as if 2^32 chunks had been stored in between
        cursor.execute("UPDATE indexing_chunk SET id = id + %s WHERE id = %s", [2**32, far.pk])
    refresh_search_stats(repository.pk)
    parts = [(part, df) for _t, part, df, _g, _v in stored_lists(repository, "spool")]
    assert parts == [(0, 4), (4, 1)]  # the far id has a list of its own
    found = fulltext("spool", use_postings=True)
    assert found.detail["fallback"] == "posting lists not read whole"  # the pass holds 32 bits
    exact = found.ranked
    assert exact[0][0] == far.pk + 2**32  # its real id, and the best score (nine spools)
    every = ranked("spool", use_postings=False)
    assert [cid for cid, _ in exact] == [cid for cid, _ in every]
    assert [s for _, s in exact] == pytest.approx([s for _, s in every], rel=1e-5)


def test_the_left_out_lists_rank_only_tests_and_docs_as_every_match_would() -> None:
    from search.retrieval.scope import build_left_out_filter

    docs = [chunk(f"src/m{i}.py", f"code_{i}", "retry retry retry backoff") for i in range(30)]
    docs += [
        chunk("tests/test_retry.py", "test_retry", "retry backoff", is_test=True),
        chunk("tests/test_more.py", "test_more", "retry retry", is_test=True),
        chunk("docs/retry.py", "retry_doc", "retry", is_doc=True),
    ]
    indexed_repository("left-out", docs)
    request = SearchRequest(query="retry backoff")
    scope = resolve_scope(request)
    repositories = scope_repositories(None, Viewer.everything())
    left_out = build_left_out_filter(scope, repositories)
    assert left_out is not None and left_out.only_kinds == {"tests", "docs"}
    parsed = parse_query("retry backoff")
    exact = fulltext_search(parsed, left_out, limit=5, cap=4, use_postings=True)
    every = fulltext_search(parsed, left_out, limit=5, cap=10**6, use_postings=False)
    assert exact.detail["exact"] is True
    assert [cid for cid, _ in exact.ranked] == [cid for cid, _ in every.ranked]
    assert len(exact.ranked) == 3  # the three test/doc chunks, none of the 30 better code chunks


def test_one_reading_of_the_postings_gives_the_scoped_and_the_left_out_lists() -> None:
    from search.retrieval.scope import build_left_out_filter

    docs = [
        chunk(f"src/m{i}.py", f"code_{i}", "retry " * (i % 5 + 1) + "backoff") for i in range(40)
    ]
    docs += [
        chunk(f"tests/test_r{i}.py", f"test_r{i}", "retry " * (i % 3 + 1), is_test=True)
        for i in range(12)
    ]
    docs += [chunk(f"docs/r{i}.md", f"doc_r{i}", "backoff retry", is_doc=True) for i in range(6)]
    indexed_repository("one-pass-a", docs)
    indexed_repository("one-pass-b", docs[::3])
    scope = resolve_scope(SearchRequest(query="retry backoff"))
    repositories = scope_repositories(None, Viewer.everything())
    scoped = build_scope_filter(scope, repositories)
    left_out = build_left_out_filter(scope, repositories)
    assert left_out is not None
    parsed = parse_query("retry backoff")
    for limit in (3, 8, 30):
        both = fulltext_search(parsed, scoped, limit=limit, cap=5, left_out=left_out)
        alone = fulltext_search(parsed, scoped, limit=limit, cap=5)
        left_alone = fulltext_search(parsed, left_out, limit=limit, cap=5)
        assert both.left_out is not None and both.left_out.detail["same_pass"] is True
        assert both.ranked == alone.ranked and both.ranked
        assert both.left_out.ranked == left_alone.ranked and both.left_out.ranked
        assert both.detail["exact"] and both.left_out.detail["exact"]
        assert all(cid not in dict(both.ranked) for cid, _ in both.left_out.ranked)


def test_short_lists_are_packed_and_long_ones_have_rows_of_their_own() -> None:
    from indexing.postings_format import RARE_DF

    words = ["quokka", "wombat", "numbat", "dingo", "bilby"][: RARE_DF + 3]
    docs = [chunk(f"src/m{i}.py", f"step_{i}", f"retry retry {w}") for i, w in enumerate(words)]
    repository = indexed_repository("packed", docs)
    long_terms = set(
        TermPostings.objects.filter(repository=repository).values_list("term", flat=True)
    )
    assert "retry" in long_terms and not long_terms & set(words)
    packed = {t for b in TermBucket.objects.filter(repository=repository) for t in b.terms}
    assert set(words) <= packed and "retry" not in packed
    # a word in one chunk is found, with the score every match would give it
    exact = ranked(f"{words[3]} retry", use_postings=True)
    every = ranked(f"{words[3]} retry", use_postings=False)
    assert [cid for cid, _ in exact] == [cid for cid, _ in every]
    assert [s for _, s in exact] == pytest.approx([s for _, s in every], rel=1e-5)
    assert exact[0][0] == search(words[3]).hits[0].chunk_id
    assert [hit.symbol for hit in search(words[3]).hits] == ["step_3"]


def test_a_quoted_phrase_is_ranked_by_the_engine_as_every_match_would() -> None:
    docs = [chunk(f"src/m{i}.py", f"near_{i}", "request then retry " * (i + 1)) for i in range(8)]
    docs += [
        chunk("src/phrase.py", "has_phrase", "request retry"),
        chunk("src/twice.py", "twice", "request retry then request retry backoff"),
    ]
    indexed_repository("phrases", docs)
    found = fulltext('"request retry" backoff', use_postings=True)
    assert "fallback" not in found.detail and found.detail["exact"] is True
    every = fulltext('"request retry" backoff', use_postings=False)
    assert [cid for cid, _ in found.ranked] == [cid for cid, _ in every.ranked]
    assert [s for _, s in found.ranked] == pytest.approx([s for _, s in every.ranked], rel=1e-5)
    hits = search('"request retry" backoff').hits
    # only the chunks holding the words side by side, in that order; the better one first
    assert [hit.symbol for hit in hits] == ["twice", "has_phrase"]
