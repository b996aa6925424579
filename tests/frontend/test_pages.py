"""Pages, the results fragment and the file view, through Django's test client."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.utils.html import escape

import llm.config  # noqa: F401 - the chat_model fixture calls llm.config.invalidate()
from frontend.pipeline import format_ms
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.ask import corpus
from tests.frontend.signed_in import api_client, ui_client
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, reindex
from tests.shared_rows import rows_fixture, shared_rows

pytestmark = pytest.mark.django_db
chat_model = corpus.chat_model  # the app's chat model pointed at the test model server

PARSER = '''"""HTTP header parsing."""


def parse_http_header(line):
    """Split one header line into a name and a value."""
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()
'''


@rows_fixture()
def indexed(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Repository]:
    """acme/demo indexed by the real pipeline (fetch, walk, chunk, store, embed), then re-indexed
    after a commit that removes old.py: generation 2 is live, and old.py is in no live row.
    Built once for the module (tests/shared_rows.py); its tests read it."""
    root = tmp_path_factory.mktemp("pages")

    def build() -> Repository:
        source = init_bare_repo(str(root / "demo.git"))
        first = commit_files(source, {"src/parser.py": PARSER, "old.py": "OLD = 1\n"})
        repository = index(root / "demo.git")
        commit_files(source, {"src/parser.py": PARSER}, parent=first, message="drop old.py")
        repository = reindex(repository)
        assert repository.active_generation == 2
        # Shown as the GitHub repository it mirrors, for the upstream links.
        Repository.objects.filter(pk=repository.pk).update(url="https://github.com/acme/demo.git")
        repository.refresh_from_db()
        return repository

    data = override_settings(REPO_SEARCH_DATA_DIR=root / "data", REPO_SEARCH_ALLOW_LOCAL_PATHS=True)
    with data, shared_rows(django_db_blocker, build, "indexed") as repository:
        yield repository
    shutil.rmtree(root / "data", ignore_errors=True)


def search(**request: Any) -> dict[str, Any]:
    """What ``POST /api/search`` answers: the real executor's results and trace."""
    response = api_client().post("/api/search", request, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def render(body: object) -> tuple[int, str]:
    response = ui_client().post("/ui/results", json.dumps(body), content_type="application/json")
    return response.status_code, response.content.decode()


def test_results_show_location_symbol_scores_and_marked_terms(indexed: Repository) -> None:
    request = {"query": "parse http header", "use_bm25": True, "use_vector": True}
    response = search(**request)
    hit = response["results"][0]
    assert (hit["file_path"], hit["symbol"]) == ("src/parser.py", "parse_http_header")
    start, end = hit["start_line"], hit["end_line"]
    status, html = render({"request": request, "response": response})
    assert status == 200
    assert f"src/parser.py:{start}-{end}" in html
    assert "parse_http_header" in html
    assert f'<td class="ln">{start}</td>' in html  # real line numbers, not 1..n
    assert "<mark>http</mark>" in html
    assert f"{hit['bm25_score']:.4f}" in html and f"{hit['vector_score']:.4f}" in html
    assert "—" in html  # rerank did not score it
    # The permalink at the hit's commit, by name (the old /repos/<id>/file address redirects).
    file_url = f"/repos/acme/demo/-/blob/{indexed.last_indexed_commit}/src/parser.py"
    assert f'href="{file_url}#L{start}-L{end}"' in html
    assert "/file?path=" not in html
    upstream = f"https://github.com/acme/demo/blob/{indexed.last_indexed_commit}/src/parser.py"
    assert f"{upstream}#L{start}-L{end}" in html


def test_the_pipeline_is_one_line_and_a_drawing_with_status_time_and_reason(
    indexed: Repository, chat_model: Any
) -> None:
    chat_model.chat_handler = lambda messages: "banana bread"  # no yes/no verdict in it
    request = {"query": "parse http header", "use_rerank": True}
    response = search(**request)
    trace = {stage["name"]: stage for stage in response["trace"]}
    assert trace["rerank"]["status"] == "failed" and trace["expansion"]["status"] == "skipped"
    status, html = render({"request": request, "response": response})
    assert status == 200
    assert '<details class="pipeline" data-pipeline' in html  # closed until the reader opens it
    start = html.index('<summary class="pipeline-line">')
    line = html[start : html.index("</summary>", start)]
    assert 'data-stage="rerank" data-status="failed"' in line
    assert "full-text " + format_ms(trace["fulltext"]["ms"]) in line
    # The drawing: full-text and vector share a column.
    assert html.count('class="pipeline-column"') == len(trace) - 1
    assert (
        escape(trace["rerank"]["reason"]) in html and escape(trace["expansion"]["reason"]) in html
    )


def test_no_results_says_what_was_searched(indexed: Repository) -> None:
    request = {
        "query": "zebra",
        "use_bm25": True,
        "use_vector": False,
        "repo_ids": [str(indexed.pk)],
        "languages": ["go"],
    }
    response = search(**request)
    assert response["results"] == []
    status, html = render({"request": request, "response": response})
    assert status == 200
    assert "No results for <q>zebra</q>" in html
    assert "repositories: acme/demo" in html and "languages: go" in html
    assert "tests left out unless the query is about them" in html
    assert "methods: full-text" in html


def test_no_exact_results_say_every_file_was_read_with_no_ranking_method(
    indexed: Repository,
) -> None:
    # A user's `repo:... lang:go "url_for"` was told it searched "with methods: full-text,
    # vector; tests ranked below code", which describes a ranked search, not this one.
    request = {"query": '"zebra-never-written"', "repo_ids": [str(indexed.pk)]}
    response = search(**request)
    assert response["mode"] == "exact" and response["results"] == []
    status, html = render({"request": request, "response": response})
    assert status == 200
    assert "Searched for exact text in repositories: acme/demo; every indexed file" in html
    assert "methods:" not in html and "left out" not in html and "another method" not in html


def test_a_lone_identifier_says_how_many_lines_hold_it_or_that_none_does(
    indexed: Repository,
) -> None:
    # A user searched `xyzzyplugh`: the page showed ranked results with a 1.0 score and never
    # said the name occurs nowhere, which the API knew (exact_matches: 0).
    for query, held in (("parse_http_header", True), ("xyzzyplugh", False)):
        request = {"query": query}
        response = search(**request)
        assert response["mode"] == "hybrid"
        assert (response["exact_matches"] > 0) is held
        status, html = render({"request": request, "response": response})
        assert status == 200
        lines = response["exact_matches"]
        said = "1 line holds it" if lines == 1 else f"{lines} lines hold it"
        shown = f'<span class="exact-matches">{said} exactly</span>'
        assert (shown in html) is held
        assert (f"<q>{query}</q> occurs nowhere</strong>" in html) is not held
    # A count cut short by its time budget (0, a lower bound) says nothing of the kind.
    cut = {**response, "exact_matches_is_lower_bound": True}
    status, html = render({"request": request, "response": cut})
    assert status == 200 and "occurs nowhere" not in html


def test_the_results_endpoint_rejects_what_is_not_a_search_response() -> None:
    assert render("just a string")[0] == 400
    assert render({"response": []})[0] == 400
    response = ui_client().post("/ui/results", b"{not json", content_type="application/json")
    assert response.status_code == 400


def test_file_view_shows_the_whole_file_with_anchors_and_the_hit_marked(
    indexed: Repository,
) -> None:
    response = ui_client().get(f"/repos/{indexed.pk}/file?path=src/parser.py&start=4&end=5")
    # The old address is a redirect to the permalink, the lines in its fragment (file.js marks them).
    permalink = f"/repos/acme/demo/-/blob/{indexed.last_indexed_commit}/src/parser.py"
    assert response.status_code == 302 and response["Location"] == f"{permalink}#L4-L5"
    response = ui_client().get(permalink)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="L1"' in html and 'id="L7"' in html and 'id="L8"' not in html
    assert '<tr id="L4">' in html and 'data-line="4"' in html
    assert 'class="nf"' in html  # highlighted
    assert f'data-permalink="{permalink}"' in html and "frontend/file.js" in html


@pytest.mark.parametrize(
    "path",
    ["old.py", "../../etc/passwd", "/etc/passwd", "src/../src/parser.py", "src/missing.py"],
)
def test_file_view_only_serves_files_of_the_active_generation(
    indexed: Repository, path: str
) -> None:
    response = ui_client().get(f"/repos/{indexed.pk}/file", {"path": path})
    assert response.status_code == 404
    assert "has no indexed file at" in response.content.decode()


def test_file_view_of_an_unknown_repository_is_a_plain_404() -> None:
    response = ui_client().get("/repos/00000000-0000-0000-0000-000000000000/file?path=a.py")
    assert response.status_code == 404
    assert "There is no repository with this id" in response.content.decode()


def test_file_view_when_the_clone_is_gone(indexed: Repository, tmp_path: Path) -> None:
    clone = repository_dir(indexed.pk)
    shutil.move(clone, tmp_path / "clone")  # gone for this test; back for the module's others
    try:
        response = ui_client().get(f"/repos/{indexed.pk}/file?path=src/parser.py", follow=True)
    finally:
        shutil.move(tmp_path / "clone", clone)
    assert response.status_code == 404
    assert "re-index it" in response.content.decode()


def test_search_page_lists_repositories_and_languages_as_filters(indexed: Repository) -> None:
    html = ui_client().get("/").content.decode()
    assert 'role="search"' in html and '<label for="q"' in html
    assert f'value="{indexed.pk}"' in html and "acme/demo" in html
    assert 'name="lang" value="python"' in html


def test_search_page_without_repositories_points_to_adding_one() -> None:
    html = ui_client().get("/").content.decode()
    assert "Nothing indexed yet" in html


def test_repositories_and_settings_pages_render() -> None:
    repositories = ui_client().get("/repos/").content.decode()
    assert 'id="add-form"' in repositories and "Git URL" in repositories
    settings_html = ui_client().get("/settings/").content.decode()
    assert 'id="base_url"' in settings_html and "readonly" in settings_html


def test_results_posted_without_content_are_read_from_the_index(indexed: Repository) -> None:
    response = search(query="parse http header")
    hit = response["results"][0]
    del hit["content"]  # what the page sends: the server reads the chunk from the index
    status, html = render({"request": {}, "response": response})
    assert status == 200
    assert "<mark>parse</mark>" in html
    assert f'<td class="ln">{hit["start_line"]}</td>' in html


def test_a_huge_minified_chunk_is_cut_for_the_snippet(indexed: Repository) -> None:
    huge = "var a=1;" * 50_000 + "\n" + "x\n" * 5_000
    response = search(query="parse http header")
    response["results"][0]["content"] = huge
    status, html = render({"request": {}, "response": response})
    assert status == 200
    assert len(html) < 100_000 and "…" in html
