"""``type:file``: file-name search over the indexed paths, in the API and MCP -- ranked by how
well the file's own name matches, globs, filters, true totals, stable pages, clear 400s, and
never a file of a repository the caller may not see."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.mcp import tools
from search.mcp.tools import ToolInputError
from tests.accounts.test_visibility_api import api
from tests.accounts.visibility_corpus import Corpus
from tests.search.exact_corpus import FILES

pytestmark = pytest.mark.django_db
URL = "/api/search"


def post(client: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(URL, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def paths(client: Client, query: str, **body: Any) -> list[str]:
    status, answer = post(client, {"query": query, "limit": 100, **body})
    assert status == 200, answer
    assert answer["mode"] == "file" and answer["total"] == len(answer["results"])
    return [hit["file_path"] for hit in answer["results"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # the name without extension, then the word in the name, then only in a directory
        (
            "type:file client",
            ["src/httpclient/client.py", "tests/test_client.py", "src/httpclient/util.js"],
        ),
        ("type:file client.py", ["src/httpclient/client.py", "tests/test_client.py"]),
        (
            "type:file CLIENT",
            ["src/httpclient/client.py", "tests/test_client.py", "src/httpclient/util.js"],
        ),
        ("type:file CLIENT case:yes", []),
        ("type:file *.py", ["tests/test_client.py", "src/httpclient/client.py"]),
        ("type:file src/**/*.js", ["src/httpclient/util.js"]),
        ("type:file http util", ["src/httpclient/util.js"]),
        ('type:file "util.js"', ["src/httpclient/util.js"]),
        ("type:file client -file:tests/", ["src/httpclient/client.py", "src/httpclient/util.js"]),
        ("type:file lang:python", ["tests/test_client.py", "src/httpclient/client.py"]),
        ("type:file nothing_like_this", []),
    ],
)
def test_file_names_rank_the_name_first(indexed, client: Client, query: str, expected) -> None:  # type: ignore[no-untyped-def]
    assert paths(client, query) == expected


def test_every_file_pages_in_one_stable_order(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    everything = paths(client, "type:file")
    assert sorted(everything) == sorted(FILES)
    pages, cursor = [], None
    while True:
        status, page = post(client, {"query": "type:file", "limit": 2, "cursor": cursor})
        assert status == 200 and page["total"] == len(FILES)
        pages.append([h["file_path"] for h in page["results"]])
        cursor = page["next_cursor"]
        assert page["truncated"] == (cursor is not None)
        if cursor is None:
            break
    assert [p for page in pages for p in page] == everything and len(pages) == 3
    hit = post(client, {"query": "type:file client.py"})[1]["results"][0]
    assert hit["file_match"] == "name" and hit["kind"] == "file"
    assert hit["path_ranges"] == [[15, 24]]  # "client.py" in src/httpclient/client.py
    assert hit["url"].startswith("/repos/acme/httpclient/-/blob/") and "#L" not in hit["url"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"query": "type:file /cli.nt/"}, "invalid_filter"),
        ({"query": "type:file sym:Client"}, "invalid_filter"),
        ({"query": "type:file [z-a].py"}, "invalid_filter"),
        ({"query": "type:file x", "cursor": "bm90IGEgY3Vyc29y"}, "invalid_cursor"),
        ({"query": "type:file " + "*" * 400}, "invalid_filter"),
    ],
)
def test_bad_file_queries_are_400s(indexed, client: Client, body, code) -> None:  # type: ignore[no-untyped-def]
    status, answer = post(client, body)
    assert status == 400, answer
    assert answer["error"]["code"] == code and answer["error"]["message"]


def test_a_cursor_of_another_query_is_refused(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    first = post(client, {"query": "type:file", "limit": 1})[1]
    exact = post(client, {"query": '"return"', "limit": 1})[1]
    for query, cursor in (
        ("type:file client", first["next_cursor"]),
        ("type:file", exact["next_cursor"]),
    ):
        status, answer = post(client, {"query": query, "cursor": cursor})
        assert status == 400 and answer["error"]["code"] == "invalid_cursor"
    status, answer = post(client, {"query": '"return"', "cursor": first["next_cursor"]})
    assert status == 400 and answer["error"]["code"] == "invalid_cursor"


def test_mcp_lists_file_names_within_the_budget(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = tools.search_code("type:file client")
    assert answer["mode"] == "file" and answer["total"] == 3
    assert answer["files"][0] == "acme/httpclient:src/httpclient/client.py"
    pages, cursor = [], None
    while True:
        page = tools.search_code("type:file", k=30, max_tokens=500, cursor=cursor)
        pages += page["files"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(p.split(":", 1)[1] for p in pages) == sorted(FILES)
    with pytest.raises(ToolInputError):
        tools.search_code("type:file /x/")


def test_a_hidden_repositorys_files_never_appear(corpus: Corpus) -> None:
    for who, expected in (
        (corpus.outsider, {"acme/shop"}),
        (corpus.member, {"acme/shop", "acme/vault"}),
    ):
        status, answer = post(api(who), {"query": "type:file .py", "limit": 100})
        assert status == 200
        assert {h["repo_name"] for h in answer["results"]} == expected
        assert answer["total"] == len(answer["results"])
    status, answer = post(api(corpus.outsider), {"query": "type:file vault"})
    assert status == 200 and answer["total"] == 0 and answer["results"] == []
    status, answer = post(api(corpus.outsider), {"query": "type:file repo:acme/vault"})
    hidden = answer
    status2, missing = post(api(corpus.outsider), {"query": "type:file repo:acme/nothing"})
    assert status == status2 == 404
    assert hidden == json.loads(json.dumps(missing).replace("acme/nothing", "acme/vault"))


@pytest.mark.parametrize(
    "body",
    [
        {"query": '"return" file:[z-a].py'},
        {"query": "how is a request sent file:src/[9-0]*"},
        {"query": "how is a request sent", "paths": ["[z-a]*"]},
        {"query": "/ret.rn/ -file:[z-a]"},
    ],
)
def test_a_backwards_glob_range_is_a_400_in_every_mode(indexed, client: Client, body) -> None:  # type: ignore[no-untyped-def]
    status, answer = post(client, body)
    assert status == 400, answer
    assert (
        answer["error"]["code"] == "invalid_filter"
        and "runs backwards" in answer["error"]["message"]
    )
