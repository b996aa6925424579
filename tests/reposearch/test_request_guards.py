"""Bodies too large or too deep, NUL characters and wrong types: a 4xx a user can read, on
every endpoint that takes input, and nothing created or changed."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from indexing.models import IndexJob, Repository
from llm.models import ModelConfig
from reposearch.request_guards import MAX_JSON_DEPTH, json_depth_exceeds
from tests.accounts_support import session_client
from tests.refusals import error_of

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
def repository(db) -> Repository:  # type: ignore[no-untyped-def]
    return Repository.objects.create(url="https://example.org/team/app.git", name="team/app")


def json_endpoints(repository: Repository) -> list[tuple[str, str]]:
    return [
        ("post", "/api/search"),
        ("post", "/api/localize"),
        ("post", "/api/ask"),
        ("put", "/api/config"),
        ("post", "/api/repos"),
        ("patch", f"/api/repos/{repository.pk}"),
        ("post", "/ui/results"),
        ("post", "/ui/answer"),
    ]


def send(client: Client, method: str, path: str, body: bytes):  # type: ignore[no-untyped-def]
    return getattr(client, method)(path, data=body, content_type="application/json")


def nothing_changed(repository: Repository) -> None:
    assert list(Repository.objects.values_list("pk", "name")) == [(repository.pk, "team/app")]
    assert IndexJob.objects.count() == 0
    assert not ModelConfig.objects.exclude(chat_model="").exists()


@pytest.mark.django_db
def test_a_10_mb_body_is_413_before_parsing_on_every_json_endpoint(repository) -> None:
    client = session_client()
    body = b'{"query": "' + b"a" * TEN_MB + b'", "name": "x", "chat_model": "y"}'
    for method, path in json_endpoints(repository):
        response = send(client, method, path, body)
        assert response.status_code == 413, (path, response.content[:300])
        if path.startswith("/api/"):
            error = error_of(response)
            assert error["code"] == "body_too_large"
            assert "the limit is 1,048,576" in error["message"]
        else:
            assert b"Request too large" in response.content
            assert b"Traceback" not in response.content
    nothing_changed(repository)


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [50_000, 100_000])
def test_json_nested_50k_to_100k_deep_is_400_on_every_json_endpoint(repository, depth) -> None:
    client = session_client()
    bare = b"[" * depth + b"]" * depth
    as_value = b'{"query": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"
    for method, path in json_endpoints(repository):
        for body in (bare, as_value):
            response = send(client, method, path, body)
            assert response.status_code == 400, (path, response.content[:300])
            if path.startswith("/api/"):
                error = error_of(response)
                assert error["code"] == "too_deep"
                assert f"deeper than {MAX_JSON_DEPTH} levels" in error["message"]
            else:
                assert b"nests deeper than" in response.content
    nothing_changed(repository)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert not json_depth_exceeds(json.dumps({"query": "[" * 10_000 + '"\\"{'}).encode())
    assert json_depth_exceeds(b"[" * (MAX_JSON_DEPTH + 1))
    assert not json_depth_exceeds(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)


@pytest.mark.django_db
def test_a_query_full_of_brackets_is_searched_not_refused() -> None:
    response = session_client().post(
        "/api/search",
        {"query": "[" * 400 + "x" + "]" * 400, "use_vector": False},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content[:300]
    assert response.json()["results"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/api/search", {"query": "a\x00b"}, "query: Null characters are not allowed"),
        ("/api/search", {"query": "a", "paths": ["src/\x00"]}, "paths"),
        ("/api/search", {"query": "a", "languages": ["py\x00"]}, "languages"),
        ("/api/search", {"query": "a", "repo_ids": 5}, "repo_ids"),
        ("/api/search", {"query": 5}, "query: Not a valid string"),
        ("/api/localize", {"issue": "a\x00b"}, "issue: Null characters are not allowed"),
        ("/api/localize", {"issue": ["a"]}, "issue: Not a valid string"),
        ("/api/ask", {"question": "why\x00"}, "question: Null characters are not allowed"),
        ("/api/ask", {"question": ["why"]}, "question: Not a valid string"),
        ("/api/repos", {"url": "https://example.org/\x00.git"}, "url: Null characters"),
    ],
)
def test_nul_characters_and_wrong_types_in_bodies_are_400(repository, path, body, fragment) -> None:
    response = session_client().post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert fragment in error_of(response)["message"]
    nothing_changed(repository)


@pytest.mark.django_db
def test_config_refuses_nul_characters_and_keeps_the_settings(repository) -> None:
    before = session_client().get("/api/config").json()
    response = session_client().put(
        "/api/config", {"chat_model": "llama\x00"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "Null characters" in error_of(response)["message"]
    assert session_client().get("/api/config").json() == before


@pytest.mark.django_db
def test_a_nul_in_the_file_views_path_is_a_400_page_not_a_database_error(repository) -> None:
    response = session_client().get(f"/repos/{repository.pk}/file", {"path": "pkg/pool.py\x00.txt"})
    assert response.status_code == 400
    assert b"contains a NUL character" in response.content
    assert b"Traceback" not in response.content and b"DataError" not in response.content


@pytest.mark.django_db
def test_a_nul_in_an_api_query_parameter_is_a_400_in_the_error_shape() -> None:
    response = session_client().get("/api/repos", {"x": "a\x00"})
    assert response.status_code == 400
    assert error_of(response) == {
        "code": "invalid",
        "message": "query parameter 'x' contains a NUL character",
        "details": {"field": "x"},
    }


@pytest.mark.django_db
def test_a_chunked_body_without_a_length_is_411_not_read_as_empty(repository) -> None:
    response = session_client().generic(
        "POST",
        "/api/repos",
        b'{"url": "https://example.org/a.git"}',
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
    )
    assert response.status_code == 411
    assert "Content-Length" in error_of(response)["message"]
    nothing_changed(repository)


@pytest.mark.django_db
def test_more_query_parameters_than_django_takes_is_a_400_not_a_crash() -> None:
    response = session_client().get("/api/repos?" + "a=1&" * 1500)
    assert response.status_code == 400
    assert error_of(response)["message"] == "too many query parameters (over 1000)"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("request_part", "fragment"),
    [
        ({"repo_ids": 5}, b"request.repo_ids must be a list"),
        ({"languages": 5}, b"request.languages must be a list"),
        ({"paths": "src/"}, b"request.paths must be a list"),
        ({"query": {"a": 1}}, b"request.query must be a string"),
    ],
)
def test_wrongly_typed_requests_to_ui_results_are_400(request_part, fragment) -> None:
    body = {"request": request_part, "response": {"results": [], "trace": []}}
    response = session_client().post("/ui/results", body, content_type="application/json")
    assert response.status_code == 400
    assert fragment in response.content


@pytest.mark.django_db
def test_ui_results_still_renders_a_well_typed_request() -> None:
    body = {
        "request": {"query": "pool", "repo_ids": [str(uuid.uuid4())], "paths": ["src/"]},
        "response": {"query": "pool", "results": [], "trace": []},
    }
    response = session_client().post("/ui/results", body, content_type="application/json")
    assert response.status_code == 200
    assert b"paths: src/" in response.content
