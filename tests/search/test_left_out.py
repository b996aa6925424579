"""Tests and docs left out by default come back where their own scores would place them
(``left_out_weight``), without moving the code's ranks; explicit exclusions stay."""

from __future__ import annotations

import pytest

from search.executor import SearchExecutor, SearchRequest
from search.ranking.fusion import RankedList, fuse_ranked_lists, place_left_out
from search.retrieval.scope import build_left_out_filter, resolve_scope
from search.types import SearchTuning
from tests.search.corpus import Piece, SourceDoc, indexed_repository


def _lists() -> tuple[list[RankedList], list[RankedList]]:
    code = [
        RankedList("fulltext", 0, [(1, 9.0), (2, 5.0), (3, 1.0), (4, 0.05)]),
        RankedList("vector", 0, [(2, 0.8), (1, 0.7), (3, 0.2)]),
    ]
    left_out = [
        RankedList("fulltext", 0, [(10, 7.0), (11, 0.5)]),  # 10 would be 2nd, 11 4th
        RankedList("vector", 0, [(11, 0.9), (10, 0.1)]),  # 11 would be 1st, 10 4th
    ]
    return code, left_out


def test_left_out_chunks_get_their_unscoped_ranks_and_the_code_keeps_its_own() -> None:
    code, left_out = _lists()
    fused = fuse_ranked_lists(code, top=None)
    before = {c.chunk_id: c.score for c in fused}
    merged, added = place_left_out(fused, code, left_out, weight=1.0, depth=50)
    assert added == 2
    scores = {c.chunk_id: c.score for c in merged}
    assert {cid: scores[cid] for cid in before} == before  # the code is untouched
    # 10: after 1 code chunk in full text, after 3 in vector; 11: after 3, and first (+ the
    # first-place bonus). Each list weighs 2; a left-out chunk sits half a rank before the code
    # chunk it beats.
    assert scores[10] == pytest.approx(2 / 61.5 + 2 / 64.5)
    assert scores[11] == pytest.approx(2 / 64.5 + 2 / 60.5 + 0.05)
    assert [c.rank for c in merged] == list(range(1, 7))
    assert [c.chunk_id for c in merged][2] == 11  # behind the two code chunks that led both lists


def test_the_weight_scales_them_and_the_depth_keeps_them_out() -> None:
    code, left_out = _lists()
    fused = fuse_ranked_lists(code, top=None)
    half, _ = place_left_out(
        fuse_ranked_lists(code, top=None), code, left_out, weight=0.5, depth=50
    )
    assert {c.chunk_id: c.score for c in half}[11] == pytest.approx(
        0.5 * (2 / 64.5 + 2 / 60.5 + 0.05)
    )
    shallow, _ = place_left_out(fused, code, left_out, weight=1.0, depth=2)
    assert {c.chunk_id for c in shallow} == {1, 2, 3, 4, 10, 11}
    scores = {c.chunk_id: c.score for c in shallow}
    assert scores[10] == pytest.approx(2 / 61.5)  # its vector rank is too deep
    assert scores[11] == pytest.approx(2 / 60.5 + 0.05)
    off, added = place_left_out(fused, code, left_out, weight=0.0, depth=50)
    assert added == 0 and [c.chunk_id for c in off] == [c.chunk_id for c in fused]


def test_only_kinds_left_out_by_default_are_searched_again() -> None:
    scope = resolve_scope(SearchRequest(query="where is the retry spacing checked"))
    found = build_left_out_filter(scope, [])
    assert found is not None and found.sql == "(c.is_test OR c.is_doc)"
    explicit = resolve_scope(SearchRequest(query="retry spacing", include_tests=False))
    found = build_left_out_filter(explicit, [])
    assert found is not None and found.sql == "NOT c.is_test AND (c.is_doc)"
    asked = resolve_scope(SearchRequest(query="tests and docs for retry spacing"))
    assert build_left_out_filter(asked, []) is None


CODE = (
    "def schedule_retry(attempt):\n"
    "    delay = base_delay * 2 ** attempt\n"
    "    return min(delay, max_delay)\n"
)
TEST = (
    "def test_retry_spacing_doubles_until_the_cap():\n"
    "    assert schedule_retry(1) == 2 * base_delay\n"
    "    # the retry spacing doubles with every attempt until the cap\n"
    "    assert schedule_retry(30) == max_delay\n"
)


@pytest.mark.django_db
def test_a_test_that_answers_better_than_the_code_comes_back() -> None:
    indexed_repository(
        "backoff",
        [
            SourceDoc("backoff/retry.py", [Piece(CODE, "schedule_retry")]),
            SourceDoc(
                "tests/test_retry.py",
                [Piece(TEST, "test_retry_spacing_doubles_until_the_cap")],
                is_test=True,
            ),
        ],
    )
    query = "where is it checked that the retry spacing doubles until the cap"
    plain = SearchExecutor().run(SearchRequest(query=query, use_vector=False))
    assert [h.file_path for h in plain.hits] == ["backoff/retry.py"]

    result = SearchExecutor().run(
        SearchRequest(query=query, use_vector=False, tuning=SearchTuning(left_out_weight=1.0))
    )
    assert [h.file_path for h in result.hits] == ["tests/test_retry.py", "backoff/retry.py"]
    assert result.hits[0].is_test
    fusion = result.stage("fusion")
    assert fusion is not None and fusion.detail["left_out"]["added"] == 1
    assert result.scope.include_tests is False  # the scope itself is as before

    kept_out = SearchExecutor().run(
        SearchRequest(
            query=query,
            use_vector=False,
            include_tests=False,
            tuning=SearchTuning(left_out_weight=1.0),
        )
    )
    assert [h.file_path for h in kept_out.hits] == ["backoff/retry.py"]


def test_they_do_not_fill_the_slots_the_code_leaves_empty() -> None:
    code = [RankedList("fulltext", 0, [(1, 9.0)])]
    behind = [RankedList("fulltext", 0, [(10, 3.0)])]  # would be 2nd, behind the only code chunk
    merged, added = place_left_out(
        fuse_ranked_lists(code, top=None), code, behind, weight=1.0, depth=50
    )
    assert added == 0 and [c.chunk_id for c in merged] == [1]
    nothing, added = place_left_out([], [], behind, weight=1.0, depth=50)
    assert added == 0 and nothing == []
