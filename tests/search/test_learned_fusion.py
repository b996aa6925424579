"""Learned fusion (issue 16, fourth round): a trained linear model orders the fused candidates."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.executor import SearchExecutor, SearchRequest
from search.ranking.fusion import FusedCandidate, RankedList
from search.ranking.ordering import (
    FEATURES,
    Model,
    QuestionShape,
    default_model,
    enabled,
    features,
    learned_order,
    load_model,
    question_shape,
)
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.scope import resolve_scope
from search.types import SearchTuning
from tests.search.corpus import Piece, SourceDoc, indexed_repository

FACTS = {
    1: ChunkFacts("r/src/app.py", False, False, "app.run", 20, "method"),
    2: ChunkFacts("r/src/app.py", False, False, "app.stop", 8, "method"),
    3: ChunkFacts("r/tests/test_app.py", True, False, "test_run", 12, "function"),
    4: ChunkFacts("r/README.md", False, True, "", 100, "window"),
}
LISTS = [
    RankedList("fulltext", 0, [(1, 9.0), (2, 6.0)]),
    RankedList("vector", 0, [(2, 0.61), (1, 0.58)]),
    RankedList("fulltext", 0, [(3, 7.0), (4, 3.0)]),  # a left-out list
]


def _pool() -> list[FusedCandidate]:
    return [
        FusedCandidate(chunk_id=i, score=s, rank=i, best_rank=i)
        for i, s in enumerate((0.05, 0.04, 0.02, 0.01), start=1)
    ]


def _model(**weights: float) -> Model:
    n = len(FEATURES)
    return Model(tuple(weights.get(name, 0.0) for name in FEATURES), (0.0,) * n, (1.0,) * n, {})


def test_the_committed_weights_match_the_features_and_come_from_the_tune_half() -> None:
    model = load_model()
    assert len(model.weights) == len(FEATURES) == len(model.means) == len(model.stds)
    assert all(s > 0 for s in model.stds)
    # Trained on the tune half only: the report half is what the default is judged on.
    assert set(model.meta["corpora"]) <= {"flask-3.0.3", "gorilla-mux-1.8.0", "nom-7.1.1"}
    assert model.meta["trained_by"] == "bench/eval/ltr_train.py"


def test_features_read_the_lists_the_chunk_and_the_question() -> None:
    shape = QuestionShape("where is app_run started", tests_left_out=True, docs_left_out=True)
    rows = features(_pool(), LISTS, FACTS, shape)
    col = {name: i for i, name in enumerate(FEATURES)}
    first, test, doc = rows[0], rows[2], rows[3]
    assert first[col["default"]] == 1.0 and first[col["default_rr"]] == 1.0
    assert first[col["ft_norm"]] == 1.0  # the best BM25 of the question
    # Ranked among scoped and left-out chunks together: the test's 7.0 is 2nd in full text.
    assert test[col["ft_rr10"]] == pytest.approx(10 / 12)
    assert test[col["vec_rr10"]] == 0.0 and test[col["vec_gap"]] == 1.0  # not in a vector list
    assert test[col["left_out_test"]] == 1.0 and doc[col["left_out_doc"]] == 1.0
    assert first[col["definition"]] == 1.0 and doc[col["definition"]] == 0.0
    assert first[col["file_others"]] > 0 and doc[col["file_others"]] == 0.0
    assert first[col["name_overlap"]] > 0  # "app" and "run" of app.run are in the question
    assert first[col["code_token_name"]] > 0  # app_run is a code token
    exact = features(_pool(), LISTS, FACTS, QuestionShape("app.stop"))
    assert [row[col["exact_name"]] for row in exact] == [0.0, 1.0, 0.0, 0.0]


def test_the_model_decides_the_order_and_scores_stay_positive() -> None:
    shape = QuestionShape("how is the app started")
    kept = learned_order(_pool(), LISTS, FACTS, shape, model=_model(default=1.0))
    assert [c.chunk_id for c in kept] == [1, 2, 3, 4]
    docs_first = learned_order(_pool(), LISTS, FACTS, shape, model=_model(is_doc=5.0), top=2)
    assert [c.chunk_id for c in docs_first] == [4, 1]  # ties keep the default order
    assert [c.rank for c in docs_first] == [1, 2]
    assert docs_first[0].score == 1.0 and 0 < docs_first[1].score < 1.0


def test_the_setting_decides_unless_the_request_does(settings: Any) -> None:
    settings.REPO_SEARCH_LEARNED_FUSION = False
    assert not enabled(None) and enabled(True)
    settings.REPO_SEARCH_LEARNED_FUSION = True
    assert enabled(None) and not enabled(False)


def test_the_question_shape_follows_the_scope() -> None:
    scope = resolve_scope(SearchRequest(query="tests for the retry helper"))
    shape = question_shape("tests for the retry helper", scope)
    assert shape.prefer_tests and not shape.tests_left_out and shape.docs_left_out
    usage = question_shape("how do I retry", resolve_scope(SearchRequest(query="how do I retry")))
    assert usage.usage and not usage.docs_left_out


CODE = (
    "def retry_with_backoff(call, attempts):\n"
    '    """Call again after a growing pause when the call fails."""\n'
    "    for attempt in range(attempts):\n"
    "        try:\n"
    "            return call()\n"
    "        except OSError:\n"
    "            sleep(2 ** attempt)\n"
)
OTHER = "def parse_header(line):\n    name, _, value = line.partition(':')\n    return name\n"
DOC = "## Retries\n\nFailed calls are retried with a growing pause between attempts.\n"


@pytest.fixture
def repository():  # type: ignore[no-untyped-def]
    return indexed_repository(
        "retrykit",
        [
            SourceDoc("retrykit/retry.py", [Piece(CODE, "retry_with_backoff")]),
            SourceDoc("retrykit/headers.py", [Piece(OTHER, "parse_header")]),
            SourceDoc("README.md", [Piece(DOC, "", "section")], language="markdown", is_doc=True),
        ],
    )


def _search(client: Client, **body: Any) -> dict[str, Any]:
    body.setdefault("use_vector", False)
    response = client.post("/api/search", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def _where(body: dict[str, Any]) -> list[tuple[str, int]]:
    return [(hit["file_path"], hit["start_line"]) for hit in body["results"]]


@pytest.mark.django_db
def test_search_with_learned_fusion_on_answers_and_says_so(  # type: ignore[no-untyped-def]
    client: Client, settings: Any, repository
) -> None:
    query = "where are failed calls retried with a growing pause"
    settings.REPO_SEARCH_LEARNED_FUSION = False
    rules = _search(client, query=query)
    fusion = next(s for s in rules["trace"] if s["name"] == "fusion")
    assert "learned_order" not in fusion["detail"]["signals"]

    settings.REPO_SEARCH_LEARNED_FUSION = True
    body = _search(client, query=query)
    fusion = next(s for s in body["trace"] if s["name"] == "fusion")
    assert fusion["detail"]["signals"]["learned_order"] == len(body["results"]) >= 1
    assert body["results"][0]["file_path"] == "retrykit/retry.py"
    scores = [hit["combined_score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] == 1.0
    # The same pool of candidates either way: only the order may differ.
    assert sorted(_where(body)) == sorted(_where(rules))
    # Through the executor the request field overrides the setting.
    off = SearchExecutor().run(
        SearchRequest(query=query, use_vector=False, tuning=SearchTuning(learned_fusion=False))
    )
    assert [(h.file_path, h.start_line) for h in off.hits] == _where(rules)
    assert default_model().weights  # the committed model was the one used


def test_rows_scored_together_score_as_each_alone() -> None:
    import random

    model = default_model()
    rng = random.Random(3)
    rows = [[rng.uniform(-3, 3) for _ in FEATURES] for _ in range(300)]
    rows += [rows[0]] * 3  # ties stay ties
    # bit for bit: the order of candidates whose scores differ in the last place is the same
    assert model.scores(rows) == [model.score(row) for row in rows]
    assert model.scores([]) == []
