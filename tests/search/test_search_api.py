"""``POST /api/search``: the response document and every validation case (never a 500)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.visibility import Viewer
from search import contract
from search.response import search_body
from search.router import SearchCall, run_search
from search.serializers import SearchResponseSerializer, serialize_response
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db

URL = "/api/search"


def post(client: Client, body: Any) -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, str) else json.dumps(body)
    response = client.post(URL, data=raw, content_type="application/json")
    return response.status_code, response.json()


@pytest.fixture
def repository():  # type: ignore[no-untyped-def]
    return indexed_repository(
        "api",
        [
            SourceDoc(
                "net/retry.py",
                [Piece("def retry_with_backoff(call):\n    return call()\n", "retry_with_backoff")],
            ),
            SourceDoc(
                "tests/test_retry.py",
                [Piece("def test_retry():\n    retry_with_backoff(f)\n", "test_retry")],
                is_test=True,
            ),
        ],
    )


def test_search_returns_results_scores_and_trace(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "retry_with_backoff", "use_vector": False, "limit": 5})
    assert status == 200
    assert body["query"] == "retry_with_backoff"
    assert body["total_bm25_hits"] == 1 and body["total_vector_hits"] == 0
    [hit] = body["results"]
    assert hit["repo_id"] == str(repository.pk) and hit["repo_name"] == "api"
    assert (hit["file_path"], hit["start_line"], hit["end_line"]) == ("net/retry.py", 1, 2)
    assert hit["symbol"] == "retry_with_backoff" and hit["commit"] == "commit1"
    assert hit["chunk_index"] == 0 and hit["language"] == "python"
    assert hit["bm25_score"] > 0 and hit["vector_score"] is None and hit["rerank_score"] is None
    assert hit["combined_score"] > 0 and "def retry_with_backoff" in hit["content"]
    stages = {s["name"]: s for s in body["trace"]}
    assert list(stages) == [
        "scope",
        "expansion",
        "fulltext",
        "vector",
        "fusion",
        "cross_encoder",
        "rerank",
        "blend",
    ]
    assert stages["vector"]["status"] == "skipped" and stages["vector"]["reason"] == "not requested"
    assert stages["fulltext"]["status"] == "ran" and stages["fulltext"]["ms"] >= 0
    assert body["scope"]["include_tests"] is False


def test_tests_come_back_for_a_test_query_and_filters_apply(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    _, body = post(client, {"query": "test retry_with_backoff", "use_vector": False})
    assert {r["symbol"] for r in body["results"]} == {"retry_with_backoff", "test_retry"}
    _, body = post(
        client, {"query": "retry", "use_vector": False, "include_tests": True, "paths": ["tests/"]}
    )
    assert [r["symbol"] for r in body["results"]] == ["test_retry"]
    _, body = post(client, {"query": "retry", "use_vector": False, "languages": ["go"]})
    assert body["results"] == []


UNKNOWN = "3993271d-3e77-46fa-a6fd-feb0943d3c6e"  # fixed: a test id names it, and xdist's workers must collect the same ids


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        ({}, 400, "invalid", "query: This field is required."),
        ({"query": ""}, 400, "invalid", "query: This field may not be blank."),
        ({"query": "   \n\t"}, 400, "invalid", "query: must not be empty or only whitespace"),
        (
            {"query": "x" * 1001},
            413,
            "query_too_long",
            "query is 1001 characters; the limit is 1000",
        ),
        ({"query": 42}, 400, "invalid", "query: Not a valid string."),
        (
            {"query": "a", "limit": 0},
            400,
            "invalid",
            "limit: Ensure this value is greater than or equal to 1.",
        ),
        (
            {"query": "a", "limit": 101},
            400,
            "invalid",
            "limit: Ensure this value is less than or equal to 100.",
        ),
        ({"query": "a", "limit": "10"}, 400, "invalid", "limit: A whole number is required."),
        ({"query": "a", "limit": 2.5}, 400, "invalid", "limit: A whole number is required."),
        ({"query": "a", "limit": True}, 400, "invalid", "limit: A whole number is required."),
        ({"query": "a", "use_bm25": "yes"}, 400, "invalid", "use_bm25: Must be a valid boolean."),
        (
            {"query": "a", "include_tests": 1},
            400,
            "invalid",
            "include_tests: Must be a valid boolean.",
        ),
        (
            {"query": "a", "repo_ids": "abc"},
            400,
            "invalid",
            'repo_ids: Expected a list of items but got type "str".',
        ),
        (  # not an id: a name (tests/search/test_search_repos_by_name.py)
            {"query": "a", "repo_ids": ["nope"]},
            404,
            "unknown_repository",
            "no repository named 'nope'",
        ),
        (
            {"query": "a", "repo_ids": [UNKNOWN]},
            404,
            "unknown_repository",
            f"unknown repository id(s): {UNKNOWN}",
        ),
        (
            {"query": "a", "languages": "python"},
            400,
            "invalid",
            'languages: Expected a list of items but got type "str".',
        ),
        ({"query": "a", "paths": [""]}, 400, "invalid", "paths: 0: This field may not be blank."),
        (
            {"query": "a", "paths": ["x" * 301]},
            400,
            "invalid",
            "paths: 0: Ensure this field has no more than 300 characters.",
        ),
        (
            {"query": "a", "include_test": True},
            400,
            "invalid",
            "unknown fields: include_test (did you mean include_tests?); the fields: branches,"
            " context_lines, cursor, file_path, group_by, include_docs, include_tests, languages,"
            " limit, match_offset, mode, paths, query, repo_ids, repos, use_bm25,"
            " use_cross_encoder, use_expansion, use_rerank, use_vector",
        ),
        (
            {"q": "a", "k": 5},
            400,
            "invalid",
            "unknown fields: k (did you mean limit?), q (did you mean query?); the fields:"
            " branches, context_lines, cursor, file_path, group_by, include_docs, include_tests,"
            " languages, limit, match_offset, mode, paths, query, repo_ids, repos, use_bm25,"
            " use_cross_encoder, use_expansion, use_rerank, use_vector",
        ),
        (
            {"query": "a", "mode": "EXACT"},
            400,
            "invalid",
            'mode: "EXACT" is not a valid choice: did you mean exact?; the choices: auto,'
            " semantic, exact, regex",
        ),
        (
            {"query": "a", "group_by": "files"},
            400,
            "invalid",
            'group_by: "files" is not a valid choice; the choices: file, chunk',
        ),
        ([{"query": "a"}], 400, "invalid", "Invalid data. Expected a dictionary, but got list."),
        (
            '{"query": "a",',
            400,
            "parse_error",
            "JSON parse error - Expecting property name enclosed in double quotes: line 1 column 15 (char 14)",
        ),
        ("null", 400, "invalid", "No data provided"),
        (
            {"query": "a", "use_bm25": False, "use_vector": False},
            400,
            "unsupported_combination",
            "use_bm25 and use_vector are both false: a hybrid search ranks the full-text list,"
            " the vector list or both, so turn one of them on",
        ),
    ],
)
def test_validation(client: Client, body: Any, status: int, code: str, message: str) -> None:
    got_status, got = post(client, body)
    assert got_status == status, got
    assert got["error"]["code"] == code
    assert got["error"]["message"] == message


def test_both_lists_off_refuse_a_hybrid_search_only(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    off = {"use_bm25": False, "use_vector": False}
    status, body = post(client, {"query": "how are retries counted", **off})
    assert status == 400 and body["error"]["code"] == "unsupported_combination"
    # Exact, regex and file-name searches read no ranked list: the flags change nothing there.
    for query, mode in (('"def "', "exact"), ("/def +\\w+/", "regex"), ("type:file py", "file")):
        status, body = post(client, {"query": query, **off})
        assert status == 200 and body["mode"] == mode and body["results"], (query, body)


def test_unknown_repository_is_named_in_the_details(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "a", "repo_ids": [str(repository.pk), UNKNOWN]})
    assert status == 404
    assert body["error"]["details"] == {"repo_ids": [UNKNOWN]}


def test_wrong_method_and_content_type(client: Client) -> None:
    assert client.get(URL).status_code == 405
    response = client.post(URL, data="query=a", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_search_is_in_the_openapi_schema(client: Client) -> None:
    response = client.get("/api/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    operation = schema["paths"]["/api/search"]["post"]
    assert {"200", "400", "404", "413"} <= set(operation["responses"])
    request_ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][request_ref.rsplit("/", 1)[-1]]["properties"]
    assert {
        "query",
        "limit",
        "use_bm25",
        "use_vector",
        "use_rerank",
        "use_expansion",
        "repo_ids",
        "languages",
        "paths",
        "include_tests",
        "include_docs",
    } <= set(fields)


def test_every_hit_says_which_commit_and_branch_it_comes_from_and_when(
    client: Client,
    repository,  # type: ignore[no-untyped-def]
) -> None:
    from datetime import datetime

    from indexing.models import Repository

    Repository.objects.filter(pk=repository.pk).update(branch="release/2.x")
    repository.refresh_from_db()
    status, body = post(client, {"query": "retry", "use_vector": False, "include_tests": True})
    assert status == 200 and len(body["results"]) == 2
    for hit in body["results"]:
        assert (hit["commit"], hit["branch"]) == ("commit1", "release/2.x")
        assert datetime.fromisoformat(hit["indexed_at"]) == repository.last_indexed_at


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("retry_with_backoff", "hybrid"),
        ('"retry_with_backoff("', "exact"),
        ("/retry_\\w+/", "regex"),
    ],
)
def test_the_shared_response_serializer_writes_what_a_new_one_writes(  # type: ignore[no-untyped-def]
    repository, query: str, mode: str
) -> None:
    """The view writes its document with one serializer bound once per process (a new one
    deep-copies ~100 fields per search): the document is the same, again and again."""
    request = contract.search_request(
        {"query": query, "use_vector": False}, viewer=Viewer.everything()
    )
    body = search_body(run_search(SearchCall(request=request)), request.limit)
    assert body["mode"] == mode and body["results"]
    fresh = SearchResponseSerializer(body).data
    assert serialize_response(body) == fresh
    assert serialize_response(body) == fresh  # writing it changed nothing on the serializer
    assert json.dumps(serialize_response(body), default=str) == json.dumps(fresh, default=str)
