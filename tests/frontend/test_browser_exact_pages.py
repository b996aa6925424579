"""Exact search on the search page, in headless Chromium: files page by page with Load more."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.frontend.browser import chromium, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_load_more_appends_the_next_page_of_files(live_server: Any, transactional_db: Any) -> None:
    docs = [
        SourceDoc(
            f"pkg/mod_{n:02d}.py", [Piece(f"def f{n}():\n    return 'needle_mark'\n", f"f{n}")]
        )
        for n in range(25)
    ]
    indexed_repository("pages", docs)
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=%22needle_mark%22")
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 20
        )
        summary = browser.find_element(By.CSS_SELECTOR, "#results .summary").text
        assert "25 files, 25 matching lines" in summary
        first = browser.find_element(By.CSS_SELECTOR, "#results .result .match-count").text
        assert first == "1 matching line"
        browser.find_element(By.CSS_SELECTOR, "#results .load-more").click()
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 25
        )
        titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .result-title")]
        assert titles == [f"pkg/mod_{n:02d}.py:1-2" for n in range(25)]
        positions = [
            e.get_attribute("data-position")
            for e in browser.find_elements(By.CSS_SELECTOR, "#results .result")
        ]
        assert positions == [str(n) for n in range(1, 26)]
        assert not browser.find_elements(By.CSS_SELECTOR, "#results .load-more")


def test_load_more_pages_a_natural_language_search_too(
    live_server: Any, transactional_db: Any
) -> None:
    docs = [
        SourceDoc(
            f"pkg/mod_{n:02d}.py", [Piece(f"def f{n}():\n    return 'needle_mark'\n", f"f{n}")]
        )
        for n in range(25)
    ]
    indexed_repository("pages", docs)
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=where+is+the+needle+mark+returned")
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 20
        )
        summary = browser.find_element(By.CSS_SELECTOR, "#results .summary").text
        assert "natural language" in summary and "(of 25)" in summary
        button = browser.find_element(By.CSS_SELECTOR, "#results .load-more")
        assert button.text == "Load more results"
        button.click()
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 25
        )
        titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .result-title")]
        assert sorted(titles) == sorted(f"pkg/mod_{n:02d}.py:1-2" for n in range(25))
        assert not browser.find_elements(By.CSS_SELECTOR, "#results .load-more")
        assert "25 of 25 results" in browser.find_element(By.ID, "search-status").text
