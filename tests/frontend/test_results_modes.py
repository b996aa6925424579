"""The results fragment says which search ran, marks hits found by meaning alone as semantic,
and links every hit to its permalink (by name, at the hit's commit) -- never to a repository
the reader may not see."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.accounts import visibility_corpus
from tests.accounts.visibility_corpus import SECRET, Corpus
from tests.frontend import test_pages
from tests.frontend.test_pages import render, search

pytestmark = pytest.mark.django_db
indexed = test_pages.indexed  # acme/demo, indexed for real with vectors
corpus = visibility_corpus.corpus


def articles(html: str) -> list[str]:
    return re.findall(r"<article class=\"result\".*?</article>", html, flags=re.S)


def test_hits_found_by_meaning_alone_carry_a_semantic_badge(indexed) -> None:  # type: ignore[no-untyped-def]
    for query in ("tokenise colon separated pairs", "parse http header"):
        request = {"query": query, "group_by": "file"}  # as the search page asks
        response = search(**request)
        assert response["mode"] == "hybrid" and response["results"]
        status, html = render({"request": request, "response": response})
        assert status == 200
        shown = articles(html)
        best: dict[tuple[str, str], dict] = {}  # one card per file, at its best chunk
        for hit in response["results"]:
            best.setdefault((hit["repo_id"], hit["file_path"]), hit)
        assert len(shown) == len(best)
        for hit, article in zip(best.values(), shown, strict=True):
            assert ('class="badge semantic"' in article) == hit["semantic"], (query, hit)
        assert "natural language" in html
    # The words are in the code: that hit is not "semantic"; the made-up words' hits all are.
    assert not search(query="parse http header")["results"][0]["semantic"]
    assert all(h["semantic"] for h in search(query="tokenise colon separated pairs")["results"])


@pytest.mark.parametrize(
    ("query", "label"),
    [('"partition"', "exact text"), ("/par+tition/", "regular expression")],
)
def test_the_summary_names_the_mode_and_links_are_permalinks(indexed, query, label) -> None:  # type: ignore[no-untyped-def]
    request = {"query": query}
    response = search(**request)
    status, html = render({"request": request, "response": response})
    assert status == 200 and label in html
    commit = indexed.last_indexed_commit
    assert f'href="/repos/acme/demo/-/blob/{commit}/src/parser.py#L' in html
    assert "/file?path=" not in html


def test_a_posted_hit_of_a_hidden_repository_gets_no_link_and_no_text(corpus: Corpus) -> None:
    client = Client()
    client.force_login(corpus.outsider)
    hit = {
        "repo_id": str(corpus.vault.pk),
        "repo_name": "x",
        "file_path": "src/vault.py",
        "chunk_index": 0,
        "start_line": 1,
        "end_line": 3,
        "commit": corpus.vault.last_indexed_commit,
    }
    body = {"request": {"query": "vault"}, "response": {"query": "vault", "results": [hit]}}
    response = client.post("/ui/results", json.dumps(body), content_type="application/json")
    html = response.content.decode()
    assert response.status_code == 200
    assert SECRET not in html and "acme/vault" not in html
    assert "/-/blob/" not in html and 'class="file-link"' not in html
    # A member gets the link, by name.
    client.force_login(corpus.member)
    html = client.post("/ui/results", json.dumps(body), content_type="application/json")
    assert (
        f'href="/repos/acme/vault/-/blob/{hit["commit"]}/src/vault.py#L1-L3"'
        in html.content.decode()
    )


def test_file_name_results_are_listed_without_an_empty_snippet(indexed) -> None:  # type: ignore[no-untyped-def]
    request = {"query": "type:file parser"}
    response = search(**request)
    assert response["mode"] == "file" and response["total"] == 1
    status, html = render({"request": request, "response": response})
    assert status == 200 and "file names" in html
    (article,) = articles(html)
    commit = indexed.last_indexed_commit
    assert f'href="/repos/acme/demo/-/blob/{commit}/src/parser.py"' in article
    assert 'class="code snippet"' not in article
