"""One search contract: the API, ``manage.py search --json`` and the MCP tool build their
requests and documents in ``search.contract``, so the same question gets the same answer."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.core.management import call_command

from search import contract
from search.executor import SearchRequest
from search.mcp.tools import search_code
from tests.accounts_support import token_client
from tests.search.corpus import Piece, SourceDoc, indexed_repository


def test_api_fields_become_the_executors_request() -> None:
    repo = uuid.uuid4()
    request = contract.search_request(
        {"query": "pool", "limit": 3, "paths": ["src/*.py"], "repo_ids": [repo], "languages": []},
        use_vector=False,
    )
    assert request == SearchRequest(
        query="pool", limit=3, path_globs=["src/*.py"], repo_ids=[repo], use_vector=False
    )  # empty lists are no filter; what is left out keeps the executor's default
    with pytest.raises(ValueError, match="path_globs"):
        contract.search_request({"query": "pool", "path_globs": ["x"]})  # the API says "paths"
    with pytest.raises(ValueError, match="limit"):
        contract.search_request({"query": "pool", "limit": 3}, limit=5)


def _without_timings(document: dict[str, Any]) -> dict[str, Any]:
    """The answer less what depends on the moment: timings, and how many posting lists this
    process had to read from the database (none once an earlier search has kept them)."""

    def stage_of(stage: dict[str, Any]) -> dict[str, Any]:
        detail = dict(stage.get("detail") or {})
        if "queries" in detail:
            detail["queries"] = [
                {k: v for k, v in query.items() if k != "lists_loaded"}
                for query in detail["queries"]
            ]
        return {**stage, "ms": None, "detail": detail}

    return {
        **{key: value for key, value in document.items() if key != "ms"},
        "trace": [stage_of(stage) for stage in document["trace"]],
    }


@pytest.mark.django_db
def test_api_command_and_mcp_tool_answer_alike() -> None:
    repository = indexed_repository(
        "contract",
        [
            SourceDoc(
                "net/retry.py",
                [
                    Piece(
                        "def retry_with_backoff(call):\n    return call()\n", "retry_with_backoff"
                    ),
                    Piece("def retry_once(call):\n    return call()\n", "retry_once"),
                ],
            ),
            SourceDoc("docs/retry.md", [Piece("How retry works.\n", kind="section")], is_doc=True),
        ],
    )
    fields = {
        "query": "retry call",
        "limit": 5,
        "use_vector": False,
        "paths": ["net/*"],
        "group_by": "chunk",  # as the command and the tool answer
    }
    response = token_client().post("/api/search", fields, format="json")
    assert response.status_code == 200, response.json()
    api = response.json()
    symbols = [hit["symbol"] for hit in api["results"]]
    assert sorted(symbols) == ["retry_once", "retry_with_backoff"]  # the docs page is left out
    assert api["scope"]["path_globs"] == ["net/*"]

    out = io.StringIO()
    call_command(
        "search", "retry call", "--limit", "5", "--no-vector", "--path", "net/*", "--json",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    assert _without_timings(json.loads(out.getvalue())) == _without_timings(api)

    tool = search_code("retry call", k=5, repo=str(repository.pk))
    assert [hit["symbol"] for hit in tool["hits"]] == symbols
