"""Pages, the results fragment and the file view, through Django's test client."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from dulwich.objects import Blob

from indexing.clone_paths import repository_dir
from indexing.models import Chunk, Repository, SourceFile
from tests.indexing.git_server import commit_files, init_bare_repo

pytestmark = pytest.mark.django_db

PARSER = '''"""HTTP header parsing."""


def parse_http_header(line):
    """Split one header line into a name and a value."""
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()
'''


@pytest.fixture
def indexed(settings: Any, tmp_path: Path) -> Iterator[Repository]:
    """A repository as the pipeline leaves it: a bare clone and file rows of generation 2."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = Repository.objects.create(
        url="https://github.com/acme/demo.git",
        name="acme/demo",
        status="ready",
        active_generation=2,
    )
    directory = repository_dir(repository.pk)
    directory.parent.mkdir(parents=True)
    repo = init_bare_repo(str(directory))
    commit = commit_files(repo, {"src/parser.py": PARSER, "old.py": "OLD = 1\n"}).decode()
    repository.last_indexed_commit = commit
    repository.save()
    sha = Blob.from_string(PARSER.encode()).id.decode()
    SourceFile.objects.create(
        repository=repository,
        generation=2,
        path="src/parser.py",
        language="python",
        blob_sha=sha,
        size_bytes=len(PARSER),
        line_count=7,
    )
    old_sha = Blob.from_string(b"OLD = 1\n").id.decode()
    SourceFile.objects.create(repository=repository, generation=1, path="old.py", blob_sha=old_sha)
    yield repository
    shutil.rmtree(directory, ignore_errors=True)


def search_response(repository: Repository, **overrides: object) -> dict[str, object]:
    hit = {
        "repo_id": str(repository.pk),
        "repo_name": repository.name,
        "file_path": "src/parser.py",
        "chunk_index": 0,
        "content": PARSER.split("\n\n\n", 1)[1],
        "language": "python",
        "start_line": 4,
        "end_line": 7,
        "symbol": "parse_http_header",
        "commit": repository.last_indexed_commit,
        "bm25_score": 3.25,
        "vector_score": 0.71,
        "combined_score": 0.0492,
        "rerank_score": None,
    }
    response: dict[str, object] = {
        "results": [hit],
        "total_bm25_hits": 1,
        "total_vector_hits": 3,
        "query": "parse http header",
        "trace": [
            {"name": "expansion", "status": "skipped", "reason": "use_expansion is off", "ms": 0},
            {"name": "bm25", "status": "ran", "reason": "", "ms": 4.2, "detail": {"hits": 1}},
            {"name": "vector", "status": "ran", "reason": "", "ms": 12.5, "detail": {}},
            {"name": "fusion", "status": "ran", "reason": "", "ms": 0.3, "detail": {}},
            {"name": "rerank", "status": "failed", "reason": "chat model unreachable", "ms": 3},
            {"name": "blend", "status": "skipped", "reason": "no rerank scores", "ms": 0},
        ],
    }
    response.update(overrides)
    return response


def render(body: object) -> tuple[int, str]:
    response = Client().post("/ui/results", json.dumps(body), content_type="application/json")
    return response.status_code, response.content.decode()


def test_results_show_location_symbol_scores_and_marked_terms(indexed: Repository) -> None:
    request = {"query": "parse http header", "use_bm25": True, "use_vector": True}
    status, html = render({"request": request, "response": search_response(indexed)})
    assert status == 200
    assert "src/parser.py:4-7" in html
    assert "parse_http_header" in html
    assert '<td class="ln">4</td>' in html  # real line numbers, not 1..n
    assert "<mark>http</mark>" in html
    assert "3.2500" in html and "0.7100" in html and "—" in html  # rerank did not score it
    assert f"/repos/{indexed.pk}/file?path=src%2Fparser.py&amp;start=4&amp;end=7#L4" in html
    assert (
        f"https://github.com/acme/demo/blob/{indexed.last_indexed_commit}/src/parser.py#L4-L7"
        in html
    )


def test_the_pipeline_is_drawn_with_status_time_and_reason(indexed: Repository) -> None:
    status, html = render({"request": {}, "response": search_response(indexed)})
    assert status == 200
    assert html.count('class="pipeline-column"') == 5  # full-text and vector share a column
    assert 'data-stage="rerank" data-status="failed"' in html
    assert "chat model unreachable" in html
    assert "use_expansion is off" in html
    assert "4.2 ms" in html and "12 ms" in html


def test_no_results_says_what_was_searched(indexed: Repository) -> None:
    request = {
        "query": "zebra",
        "use_bm25": True,
        "repo_ids": [str(indexed.pk)],
        "languages": ["go"],
    }
    status, html = render(
        {"request": request, "response": search_response(indexed, results=[], query="zebra")}
    )
    assert status == 200
    assert "No results for <q>zebra</q>" in html
    assert "repositories: acme/demo" in html and "languages: go" in html
    assert "tests only if the query is about them" in html


def test_the_results_endpoint_rejects_what_is_not_a_search_response() -> None:
    assert render("just a string")[0] == 400
    assert render({"response": []})[0] == 400
    response = Client().post("/ui/results", b"{not json", content_type="application/json")
    assert response.status_code == 400


def test_file_view_shows_the_whole_file_with_anchors_and_the_hit_marked(
    indexed: Repository,
) -> None:
    response = Client().get(f"/repos/{indexed.pk}/file?path=src/parser.py&start=4&end=5")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="L1"' in html and 'id="L7"' in html and 'id="L8"' not in html
    assert '<tr id="L4" class="hit">' in html and '<tr id="L5" class="hit">' in html
    assert '<tr id="L6">' in html
    assert 'class="nf"' in html  # highlighted
    assert f"/blob/{indexed.last_indexed_commit}/src/parser.py#L4-L5" in html


@pytest.mark.parametrize(
    "path",
    ["old.py", "../../etc/passwd", "/etc/passwd", "src/../src/parser.py", "src/missing.py"],
)
def test_file_view_only_serves_files_of_the_active_generation(
    indexed: Repository, path: str
) -> None:
    response = Client().get(f"/repos/{indexed.pk}/file", {"path": path})
    assert response.status_code == 404
    assert "has no indexed file at" in response.content.decode()


def test_file_view_of_an_unknown_repository_is_a_plain_404() -> None:
    response = Client().get("/repos/00000000-0000-0000-0000-000000000000/file?path=a.py")
    assert response.status_code == 404
    assert "There is no repository with this id" in response.content.decode()


def test_file_view_when_the_clone_is_gone(indexed: Repository) -> None:
    shutil.rmtree(repository_dir(indexed.pk))
    response = Client().get(f"/repos/{indexed.pk}/file?path=src/parser.py")
    assert response.status_code == 404
    assert "re-index it" in response.content.decode()


def test_search_page_lists_repositories_and_languages_as_filters(indexed: Repository) -> None:
    html = Client().get("/").content.decode()
    assert 'role="search"' in html and '<label for="q"' in html
    assert f'value="{indexed.pk}"' in html and "acme/demo" in html
    assert 'name="lang" value="python"' in html


def test_search_page_without_repositories_points_to_adding_one() -> None:
    html = Client().get("/").content.decode()
    assert "Nothing indexed yet" in html


def test_repositories_and_settings_pages_render() -> None:
    repositories = Client().get("/repos/").content.decode()
    assert 'id="add-form"' in repositories and "Git URL" in repositories
    settings_html = Client().get("/settings/").content.decode()
    assert 'id="base_url"' in settings_html and "readonly" in settings_html


def test_results_posted_without_content_are_read_from_the_index(indexed: Repository) -> None:
    source = SourceFile.objects.get(repository=indexed, generation=2)
    Chunk.objects.create(
        repository=indexed,
        file=source,
        generation=2,
        index=0,
        start_line=4,
        end_line=7,
        symbol="parse_http_header",
        language="python",
        path="src/parser.py",
        content="def parse_http_header(line):\n    return line\n",
        content_hash="h",
    )
    response = search_response(indexed)
    del response["results"][0]["content"]  # type: ignore[index]
    status, html = render({"request": {}, "response": response})
    assert status == 200
    assert "<mark>parse</mark>" in html and '<td class="ln">5</td>' in html


def test_a_huge_minified_chunk_is_cut_for_the_snippet(indexed: Repository) -> None:
    huge = "var a=1;" * 50_000 + "\n" + "x\n" * 5_000
    response = search_response(indexed)
    response["results"][0]["content"] = huge  # type: ignore[index]
    status, html = render({"request": {}, "response": response})
    assert status == 200
    assert len(html) < 100_000 and "…" in html
