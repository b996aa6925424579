"""``POST /api/search`` counts the current query's result files per repository and language
(``facets``, issue 29 item 3): exact and regex count every matching file, so the counts equal
the results' own over all pages; hybrid counts the files of its ranked answer and says so."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from django.test import Client

from tests.search.exact_corpus import FILES, three_repositories

pytestmark = pytest.mark.django_db
__all__ = ["three_repositories"]  # the fixture


def search(client: Client, **fields: Any) -> dict[str, Any]:
    body = {"use_vector": False, "limit": 100, **fields}
    answer = client.post("/api/search", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()  # type: ignore[no-any-return]


def counted(body: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    facets = body["facets"]
    return (
        {row["name"]: row["files"] for row in facets["repositories"]},
        {row["language"]: row["files"] for row in facets["languages"]},
    )


def of_results(results: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    return (
        dict(Counter(hit["repo_name"] for hit in results)),
        dict(Counter(hit["language"] for hit in results if hit["language"])),
    )


@pytest.mark.parametrize("query", ['"client"', "/def \\w+_auth/", '"return" lang:python'])
def test_exact_and_regex_facets_count_every_matching_file(
    three_repositories, client: Client, query: str
) -> None:  # type: ignore[no-untyped-def]
    body = search(client, query=query)
    assert body["facets"]["basis"] == "matching_files"
    assert not body["facets"]["is_lower_bound"] and not body["truncated"]
    assert counted(body) == of_results(body["results"])
    # the pages of one file each add up to the same counts: the facets are not the page's
    first = search(client, query=query, limit=1)
    assert counted(first) == counted(body)
    assert len(first["results"]) == 1 < body["total"]


def test_exact_counts_equal_the_files_that_hold_the_text(
    three_repositories, client: Client
) -> None:  # type: ignore[no-untyped-def]
    holding = sum("client" in str(text).lower() for text in FILES.values())
    repositories, languages = counted(search(client, query='"client"', limit=2))
    assert repositories == {name: holding for name in three_repositories}
    assert sum(languages.values()) == 3 * holding


def test_hybrid_facets_count_the_files_of_the_ranked_answer(
    three_repositories, client: Client
) -> None:  # type: ignore[no-untyped-def]
    asked = {"query": "auth token user", "include_docs": True, "include_tests": True}
    body = search(client, **asked, group_by="file")
    assert body["facets"]["basis"] == "ranked_candidates"
    assert counted(body) == of_results(body["results"])  # one result per file (group_by file)
    assert sum(counted(body)[0].values()) == body["total"]
    page = search(client, **asked, group_by="file", limit=1)
    assert counted(page) == counted(body)


def test_a_repository_facet_narrows_to_exactly_its_count(
    three_repositories, client: Client
) -> None:  # type: ignore[no-untyped-def]
    repositories, _ = counted(search(client, query='"client"'))
    for name, files in repositories.items():  # acme/httpclient is a prefix of another name
        narrowed = search(client, query=f'"client" repo:{name}')
        assert narrowed["total"] == files and {h["repo_name"] for h in narrowed["results"]} == {
            name
        }
