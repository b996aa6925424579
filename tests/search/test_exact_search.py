"""Exact and regex search over a real indexed git repository agree with ``git grep``.

The repository is committed with dulwich, fetched and indexed by the real pipeline (walk, chunk,
store, embed); every answer is collected page by page through ``POST /api/search`` and compared
with ``git grep -n -I`` (``-F`` / ``-E``, with and without ``-i``) at the same commit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from indexing.models import SourceFile
from tests.search.exact_corpus import FILES

pytestmark = pytest.mark.django_db

URL = "/api/search"


def post(client: Client, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(URL, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def all_pages(client: Client, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict]]:
    """Every hit of every page, and every page's body."""
    hits: list[dict[str, Any]] = []
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        status, page = post(client, {**body, **({"cursor": cursor} if cursor else {})})
        assert status == 200, page
        pages.append(page)
        hits += page["results"]
        cursor = page["next_cursor"]
        if not cursor:
            return hits, pages
        assert len(pages) < 50


def git_grep(path: Path, commit: str, flags: list[str], pattern: str) -> set[tuple[str, int, str]]:
    done = subprocess.run(
        ["git", f"--git-dir={path}", "grep", "-n", "-I", *flags, "-e", pattern, commit, "--"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    found = set()
    for line in done.stdout.splitlines():
        _, file_path, number, text = line.split(":", 3)
        found.add((file_path, int(number), text))
    return found


def ours(hits: list[dict[str, Any]]) -> set[tuple[str, int, str]]:
    return {(h["file_path"], m["line"], m["text"]) for h in hits for m in h["matches"]}


def test_every_file_of_the_commit_is_indexed(indexed) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    paths = set(
        SourceFile.objects.filter(
            repository=repository, generation=repository.active_generation
        ).values_list("path", flat=True)
    )
    assert paths == set(FILES)


CASES = [
    # (query, git grep flags, git grep pattern)
    ('"follow_redirects=True"', ["-F", "-i"], "follow_redirects=True"),
    ('"Client" case:yes', ["-F"], "Client"),
    ('"client"', ["-F", "-i"], "client"),
    ('"obj.foo.bar[baz]()"', ["-F", "-i"], "obj.foo.bar[baz]()"),
    ('"std::vector"', ["-F", "-i"], "std::vector"),
    ('"x -> y"', ["-F", "-i"], "x -> y"),
    ('":="', ["-F", "-i"], ":="),
    ('"\\"Authorization\\""', ["-F", "-i"], '"Authorization"'),
    ('"café"', ["-F", "-i"], "café"),
    ('"return"', ["-F", "-i"], "return"),
    ('"nowhere_to_be_found_xyz"', ["-F", "-i"], "nowhere_to_be_found_xyz"),
    (r"/def [a-z_]+_auth\(/", ["-E", "-i"], r"def [a-z_]+_auth\("),
    (r"/^line [0-9]+: the/ case:yes", ["-E"], r"^line [0-9]+: the"),
    ("/(make|token)_auth/", ["-E", "-i"], "(make|token)_auth"),
    ("/x{2,3}/", ["-E", "-i"], "x{2,3}"),
    ("/return +[a-z]/ case:yes", ["-E"], "return +[a-z]"),
]


@pytest.mark.parametrize(("query", "flags", "pattern"), CASES)
def test_exact_and_regex_answers_equal_git_grep(
    indexed, client: Client, query, flags, pattern
) -> None:  # type: ignore[no-untyped-def]
    path, repository = indexed
    hits, pages = all_pages(client, {"query": query, "limit": 2})
    expected = git_grep(path, repository.last_indexed_commit, flags, pattern)
    assert ours(hits) == expected
    files = {p for p, _, _ in expected}
    assert [h["file_path"] for h in hits] == sorted(files)  # one hit per file, path order
    assert all(p["total"] == len(files) and not p["total_is_lower_bound"] for p in pages)
    assert all(p["match_total"] == len(expected) for p in pages)
    assert pages[0]["mode"] == ("regex" if query.startswith("/") else "exact")
    assert all(h["match_count"] == len(h["matches"]) for h in hits)
    for page in pages[:-1]:
        assert page["truncated"] and len(page["results"]) == 2
    assert not pages[-1]["truncated"] and pages[-1]["next_cursor"] is None


def test_ranges_context_and_links(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    status, body = post(client, {"query": '"follow_redirects" file:src/**/*.py', "limit": 10})
    assert status == 200
    [hit] = body["results"]
    assert hit["file_path"] == "src/httpclient/client.py"
    assert [m["line"] for m in hit["matches"]] == [6, 7]
    line7 = hit["matches"][1]
    assert [line7["text"][a:b] for a, b in line7["ranges"]] == ["follow_redirects"] * 2
    # Two context lines each side, merged into one snippet: lines 4..9.
    assert [(s["start_line"], s["end_line"]) for s in hit["snippets"]] == [(4, 9)]
    assert hit["content"].split("\n")[2] == "    def __init__(self, follow_redirects=True):"
    assert hit["commit"] == repository.last_indexed_commit
    commit = repository.last_indexed_commit
    assert hit["url"] == f"/repos/acme/httpclient/-/blob/{commit}/src/httpclient/client.py#L6"


def test_filters_narrow_exact_search(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    def files(query: str) -> set[str]:
        status, body = post(client, {"query": query, "limit": 50})
        assert status == 200, body
        return {h["file_path"] for h in body["results"]}

    everywhere = files('"client"')
    assert "tests/test_client.py" in everywhere and "docs/guide.md" in everywhere
    assert files('"client" lang:python') == {"src/httpclient/client.py", "tests/test_client.py"}
    assert files('"client" -file:tests/ -file:*.md -file:notes/') == {
        "src/httpclient/client.py",
        "src/native/vec.cpp",
    }
    assert files('"client" repo:acme/http*') == everywhere
    assert files('"client" -repo:acme/*') == set()
    assert files('"Client" case:yes file:*.cpp') == set()
    # Several patterns: all in the same file (as git grep --all-match).
    assert files('"std::vector" "push_back"') == {"src/native/vec.cpp"}
    assert files('"std::vector" "follow_redirects"') == set()


def test_repo_filter_with_words_keeps_hybrid_inside_the_repository(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "repo:acme/httpclient send request", "use_vector": False})
    assert status == 200 and body["mode"] == "hybrid" and body["query"] == "send request"
    assert body["results"] and {h["repo_name"] for h in body["results"]} == {"acme/httpclient"}
    status, body = post(
        client,
        {
            "query": "send request -file:src/ -lang:python",
            "include_tests": True,
            "include_docs": True,
        },
    )
    assert status == 200 and body["mode"] == "hybrid" and body["results"]
    assert all(not h["file_path"].startswith("src/") for h in body["results"])
    assert all(h["language"] != "python" for h in body["results"])
    status, body = post(client, {"query": "repo:nothing-like-this send"})
    assert status == 404 and body["error"]["code"] == "unknown_repository"
    assert "repo:nothing-like-this" in body["error"]["message"]


READ_PLANS: dict[str, dict[str, float]] = {
    # search.exact.reader's settings (and the engine's BATCH_FILES) forced per plan
    "listed by repository, served three files a batch": {
        "COMMON_SHARE": 10**6,
        "PROBE_CHUNKS": 10**6,
        "BATCH_FILES": 3,
    },
    "by repository, one a probe, never the rest at once": {
        "COMMON_SHARE": 10**6,
        "MAX_REPOS_PER_PROBE": 1,
        "GLOBAL_AFTER_REPOS": 10**6,
        "BATCH_FILES": 1,
    },
    "the first repository alone, then the rest in one probe": {
        "COMMON_SHARE": 10**6,
        "SPARSE_FILES_PER_REPO": 10**6,
        "GLOBAL_AFTER_REPOS": -1,
        "BATCH_FILES": 2,
    },
    "a repository holding too many chunks: windows from there": {
        "COMMON_SHARE": 10**6,
        "PROBE_CHUNKS": 1,
        "WINDOW_FILES": 1,
        "BATCH_FILES": 3,
    },
    "common by the planner's estimate: windows without a probe": {
        "COMMON_SHARE": -1,
        "WINDOW_FILES": 1,
        "BATCH_FILES": 3,
    },
    "windows of one file, one a batch (batches often empty)": {
        "PROBE_CHUNKS": 0,
        "WINDOW_FILES": 1,
        "MAX_WINDOW_FILES": 1,
        "WINDOWS_PER_BATCH": 1,
        "BATCH_FILES": 3,
    },
    "windows growing from two files until a batch fills": {
        "PROBE_CHUNKS": 0,
        "WINDOW_FILES": 2,
        "WINDOWS_PER_BATCH": 1000,
        "BATCH_FILES": 3,
    },
    "one window holds every file": {"PROBE_CHUNKS": 0, "WINDOW_FILES": 1000},
}


def force_plan(monkeypatch: pytest.MonkeyPatch, plan: str) -> None:
    from search.exact import engine, reader

    for name, value in READ_PLANS[plan].items():
        monkeypatch.setattr(engine if name == "BATCH_FILES" else reader, name, value)


@pytest.mark.parametrize("plan", READ_PLANS)
@pytest.mark.parametrize(("query", "flags", "pattern"), CASES)
def test_every_read_plan_gives_the_git_grep_answer(
    indexed, client: Client, monkeypatch: pytest.MonkeyPatch, plan, query, flags, pattern
) -> None:  # type: ignore[no-untyped-def]
    """A selective literal is read from the trigram index once (listed), a common one by walking
    the files a window at a time (``search.exact.reader``); forced either way, with windows and
    batches of every size, the pages, totals and match counts equal ``git grep``."""
    force_plan(monkeypatch, plan)
    path, repository = indexed
    hits, pages = all_pages(client, {"query": query, "limit": 2})
    expected = git_grep(path, repository.last_indexed_commit, flags, pattern)
    assert ours(hits) == expected
    files = {p for p, _, _ in expected}
    assert [h["file_path"] for h in hits] == sorted(files)
    assert all(p["total"] == len(files) and not p["total_is_lower_bound"] for p in pages)
    assert all(p["match_total"] == len(expected) for p in pages)


@pytest.mark.parametrize("plan", READ_PLANS)
def test_every_read_plan_keeps_filters_and_several_patterns(
    indexed, client: Client, monkeypatch: pytest.MonkeyPatch, plan
) -> None:  # type: ignore[no-untyped-def]
    force_plan(monkeypatch, plan)

    def files(query: str) -> list[str]:
        hits, _ = all_pages(client, {"query": query, "limit": 2})
        return [h["file_path"] for h in hits]

    assert files('"client" lang:python') == ["src/httpclient/client.py", "tests/test_client.py"]
    assert files('"client" -file:tests/ -file:*.md -file:notes/') == [
        "src/httpclient/client.py",
        "src/native/vec.cpp",
    ]
    assert files('"client" -repo:acme/*') == []
    assert files('"std::vector" "push_back"') == ["src/native/vec.cpp"]
    assert files('"std::vector" "follow_redirects"') == []
    assert files('"std::vector" /push_[a-z]+/') == ["src/native/vec.cpp"]
