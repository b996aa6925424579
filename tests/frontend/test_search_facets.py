"""The results page's repository and language facets count the current query's result files
and apply ``repo:`` / ``lang:`` when clicked (issue 29 item 3): the counts are the API's
``facets`` of a real search over a real indexed repository, not the files indexed."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from typing import Any

import pytest
from django.test import Client
from selenium.webdriver.common.by import By

from tests.frontend.browser import chromium, wait_until
from tests.frontend.signed_in import sign_in_browser, ui_client
from tests.search.corpus import Piece, SourceDoc, indexed_repository
from tests.search.exact_corpus import FILES, indexed, source

__all__ = ["indexed", "source"]  # the fixtures


def rendered(client: Client, query: str) -> tuple[dict[str, Any], str]:
    request = {"query": query, "use_vector": False, "limit": 20}
    answer = client.post("/api/search", json.dumps(request), content_type="application/json")
    assert answer.status_code == 200, answer.content
    body = {"request": request, "response": answer.json()}
    html = client.post("/ui/results", json.dumps(body), content_type="application/json")
    return answer.json(), html.content.decode()


def facet_counts(html: str) -> dict[str, int]:
    pairs = re.findall(
        r'class="facet[^"]*"[^>]*>([^<]+)</(?:a|span)> <span class="facet-count">(\d+)', html
    )
    return {label: int(count) for label, count in pairs}


@pytest.mark.django_db
def test_facets_count_the_files_of_this_search_not_the_index(indexed) -> None:  # type: ignore[no-untyped-def]
    client = ui_client("read")
    response, html = rendered(client, '"follow_redirects"')
    holding = [path for path, text in FILES.items() if "follow_redirects" in str(text)]
    assert len(holding) == 3 < len(FILES)
    counts = facet_counts(html)
    assert counts["acme/httpclient"] == len(holding) == response["total"]
    # client.py and test_client.py; util.js holds no match
    assert counts["python"] == 2 and "javascript" not in counts
    link = re.search(r'<a class="facet" href="([^"]+)" data-query="([^"]+)">python</a>', html)
    assert link and html_unescape(link.group(2)) == '"follow_redirects" lang:python'
    _, narrowed = rendered(client, html_unescape(link.group(2)))
    assert re.search(r'<span class="facet applied"[^>]*>python</span>', narrowed)  # applied
    # A hybrid search's counts say what they cover: the files of its ranked answer.
    _, hybrid = rendered(client, "follow redirects client")
    assert "Files in the ranked answer" in hybrid and "not every file" in hybrid


def filter_count(browser: Any, name: str, value: str) -> str:
    attribute = "data-facet-repo" if name == "repo" else "data-facet-lang"
    span = browser.find_element(By.CSS_SELECTOR, f'#filters [{attribute}="{value}"]')
    return str(browser.execute_script("return arguments[0].textContent", span))


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_clicking_a_language_facet_narrows_the_search(
    live_server: Any, transactional_db: Any
) -> None:
    repository = indexed_repository(
        "acme/mixed",
        [
            SourceDoc("app/a.py", [Piece("x = 'needle_mark'\n", "")]),
            SourceDoc("app/b.py", [Piece("y = 'needle_mark'\n", "")]),
            SourceDoc("web/c.js", [Piece("const z = 'needle_mark';\n", "")], language="javascript"),
        ],
    )
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=%22needle_mark%22")
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 3
        )
        facets = browser.find_element(By.CSS_SELECTOR, "#results nav.facets").text
        assert "python 2" in facets and "javascript 1" in facets and "acme/mixed 3" in facets
        # the filter checkboxes count this search's files too (not the files indexed)
        assert filter_count(browser, "lang", "python") == "2"
        assert filter_count(browser, "lang", "javascript") == "1"
        assert filter_count(browser, "repo", str(repository.pk)) == "3"
        browser.find_element(
            By.XPATH, "//nav[@aria-label='Filter these results']//a[text()='javascript']"
        ).click()
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 1
        )
        assert (
            browser.find_element(By.ID, "q").get_attribute("value")
            == '"needle_mark" lang:javascript'
        )
        assert "web/c.js" in browser.find_element(By.CSS_SELECTOR, "#results .result h2").text
        assert filter_count(browser, "lang", "python") == "0"  # counts of the narrowed search
        assert filter_count(browser, "lang", "javascript") == "1"
        assert "lang%3Ajavascript" in browser.current_url
