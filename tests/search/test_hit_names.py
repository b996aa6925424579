"""Every search hit names the identifiers go to definition / find references take (``names``):
the name a hybrid or ``sym:`` hit's chunk defines, the whole identifiers an exact or regex hit
matched (issue 29 item 4, for API clients and agents)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.symbols.hit_names import hit_names
from tests.search.exact_corpus import indexed, source

pytestmark = pytest.mark.django_db
__all__ = ["indexed", "source"]  # the fixtures


def search(client: Client, query: str, **extra: Any) -> dict[str, Any]:
    body = {"query": query, "use_vector": False, **extra}
    answer = client.post("/api/search", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()  # type: ignore[no-any-return]


def by_path(body: dict[str, Any]) -> dict[str, list[str]]:
    return {hit["file_path"]: hit["names"] for hit in body["results"]}


def test_exact_and_regex_hits_name_the_identifiers_they_matched(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    exact = by_path(search(client, '"follow_redirects"'))
    assert exact["src/httpclient/client.py"] == ["follow_redirects"]
    regex = by_path(search(client, r"/def \w+_auth/"))
    assert regex["src/httpclient/client.py"] == []  # "def make_auth" is not one identifier
    words = by_path(search(client, r"/\w+_auth\b/"))
    assert words["src/httpclient/client.py"] == ["make_auth", "token_auth"]


def test_a_hybrid_hit_names_what_its_chunk_defines(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    body = search(client, "token auth bearer")
    top = body["results"][0]
    assert top["symbol"] == "token_auth" and top["names"] == ["token_auth"]
    definitions = client.get("/api/symbols/definitions", {"name": top["names"][0]}).json()
    assert [(d["path"], d["start_line"]) for d in definitions["results"]] == [
        ("src/httpclient/client.py", top["start_line"])
    ]


def test_part_of_a_word_names_nothing() -> None:
    line = {"text": "pool_maxsize = max(1, max_retries)", "ranges": [[5, 8], [15, 18]]}
    assert hit_names("", [line]) == ["max"]  # max( is a whole word; the max of maxsize is not
    assert hit_names("Client.send", [line]) == ["send", "max"]


def test_a_hybrid_hit_also_names_the_identifiers_of_the_question_it_holds(
    indexed, client: Client
) -> None:  # type: ignore[no-untyped-def]
    body = search(client, "where is follow_redirects set on the client", group_by="chunk")
    holding = [hit for hit in body["results"] if "follow_redirects" in hit["content"]]
    assert holding
    for hit in holding:
        assert "follow_redirects" in hit["names"], hit["symbol"]
        assert "client" not in hit["names"] and "where" not in hit["names"]  # plain words
    others = [hit for hit in body["results"] if "follow_redirects" not in hit["content"]]
    assert all("follow_redirects" not in hit["names"] for hit in others)
