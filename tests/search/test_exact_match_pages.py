"""A file's matching lines past the first 100 are said to exist and can be read page by page
(``matches_truncated``, ``file_path`` + ``match_offset``), and every total says whether it is a
lower bound (issue 29 item 2). Checked against ``git grep`` on the exact corpus."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.search.test_exact_search import git_grep, post

pytestmark = pytest.mark.django_db

LONG = "notes/long.txt"


def test_a_file_with_more_than_100_matching_lines_says_so_and_pages_them(
    indexed: Any, client: Client
) -> None:
    path, repository = indexed
    expected = sorted(
        number
        for file, number, _ in git_grep(
            path, repository.last_indexed_commit, ["-F", "-i"], "filler"
        )
        if file == LONG
    )
    assert len(expected) > 200
    status, body = post(client, {"query": '"filler"'})
    assert status == 200, body
    assert body["match_total_is_lower_bound"] is False and body["total_is_lower_bound"] is False
    (hit,) = [h for h in body["results"] if h["file_path"] == LONG]
    assert hit["match_count"] == len(expected) and len(hit["matches"]) == 100
    assert hit["matches_truncated"] is True and hit["matches_offset"] == 0
    seen = [m["line"] for m in hit["matches"]]
    offset = 100
    while hit["matches_truncated"]:
        status, body = post(
            client,
            {
                "query": '"filler"',
                "repo_ids": [str(repository.pk)],
                "file_path": LONG,
                "match_offset": offset,
            },
        )
        assert status == 200, body
        (hit,) = body["results"]  # that file only
        assert hit["file_path"] == LONG and hit["matches_offset"] == offset
        seen += [m["line"] for m in hit["matches"]]
        offset += len(hit["matches"])
    assert seen == expected


def test_a_file_that_fits_is_not_truncated(indexed: Any, client: Client) -> None:
    status, body = post(client, {"query": '"follow_redirects"'})
    assert status == 200
    assert body["results"] and not any(h["matches_truncated"] for h in body["results"])


def test_file_path_narrows_to_that_file_only(indexed: Any, client: Client) -> None:
    status, body = post(client, {"query": '"client"', "file_path": "src/httpclient/client.py"})
    assert status == 200
    assert [h["file_path"] for h in body["results"]] == ["src/httpclient/client.py"]
    assert body["total"] == 1
    status, body = post(client, {"query": '"client"', "file_path": "src/httpclient/client.p"})
    assert status == 200 and body["results"] == []  # a path, not a prefix or a glob
    # ... and within the query's own file: filters
    for query, found in (('"client" file:*.py', 1), ('"client" file:*.js', 0)):
        status, body = post(client, {"query": query, "file_path": "src/httpclient/client.py"})
        assert status == 200 and len(body["results"]) == found, query


def test_match_paging_is_refused_for_a_natural_language_search(
    indexed: Any, client: Client
) -> None:
    status, body = post(client, {"query": "where is the client", "match_offset": 5})
    assert status == 400
    assert "exact or regex" in body["error"]["message"]
