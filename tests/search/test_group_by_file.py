"""``POST /api/search`` groups hybrid results by file, as a code host does (issue 29 item 3):
with ``group_by: "file"`` (what the search page asks for), one result per file at the rank of its
best chunk, its other chunks under it; ``limit``, ``total`` and the pages count files. The
default, ``group_by: "chunk"``, keeps one result per chunk, as scripts written before had it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.search.exact_corpus import indexed, source

pytestmark = pytest.mark.django_db
__all__ = ["indexed", "source"]  # the fixtures

QUERY = "auth token user client"


def search(client: Client, **fields: Any) -> dict[str, Any]:
    body = {"query": QUERY, "use_vector": False, "include_tests": True, "include_docs": True,
            "group_by": "file"}  # fmt: skip
    body.update(fields)
    body = {name: value for name, value in body.items() if value is not None}  # None: unasked
    answer = client.post("/api/search", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()  # type: ignore[no-any-return]


def test_hybrid_results_are_one_per_file_with_its_other_chunks(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    chunks = search(client, group_by="chunk", limit=50)
    assert chunks["group_by"] == "chunk"
    paths = [hit["file_path"] for hit in chunks["results"]]
    assert paths.count("src/httpclient/client.py") >= 3  # the file repeats, chunk by chunk
    files = search(client, limit=50)
    assert files["group_by"] == "file"
    unasked = search(client, limit=50, group_by=None)
    assert unasked["group_by"] == "chunk"  # the default
    assert [hit["file_path"] for hit in unasked["results"]] == paths
    grouped = [hit["file_path"] for hit in files["results"]]
    assert grouped == list(dict.fromkeys(paths))  # each file once, at its best chunk's rank
    assert files["total"] == len(grouped)
    client_py = files["results"][grouped.index("src/httpclient/client.py")]
    below = [(c["start_line"], c["symbol"]) for c in client_py["chunks"]]
    expected = [
        (hit["start_line"], hit["symbol"])
        for hit in chunks["results"]
        if hit["file_path"] == "src/httpclient/client.py"
    ]
    assert [(client_py["start_line"], client_py["symbol"]), *below] == expected
    assert all(c["url"].startswith("/repos/acme/httpclient/-/blob/") for c in client_py["chunks"])


def test_grouped_pages_hold_limit_files_and_never_repeat_one(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    whole = [hit["file_path"] for hit in search(client, limit=50)["results"]]
    assert len(whole) >= 3
    seen: list[str] = []
    cursor = None
    while True:
        page = search(client, limit=1, cursor=cursor)
        assert len(page["results"]) == 1
        seen += [hit["file_path"] for hit in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == whole
