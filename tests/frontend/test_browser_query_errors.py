"""A refused query on the search page, in headless Chromium: the API's message, and a link that
searches for the corrected query (``details.suggested_query``) with the page's filters kept."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from selenium.webdriver.common.by import By

from tests.frontend.browser import chromium, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_a_misspelt_language_offers_the_corrected_search(
    live_server: Any, transactional_db: Any
) -> None:
    indexed_repository(
        "acme/tools",
        [SourceDoc("tools/needle.py", [Piece("def find():\n    return 'needle_mark'\n", "find")])],
    )
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=lang%3Apyton+%22needle_mark%22&tests=1")
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .error"))
        panel = browser.find_element(By.CSS_SELECTOR, "#results .error")
        assert "did you mean python?" in panel.text
        link = panel.find_element(By.CSS_SELECTOR, ".suggestion a")
        assert link.text == 'lang:python "needle_mark"'
        query = parse_qs(urlparse(link.get_attribute("href")).query)
        assert query == {"q": ['lang:python "needle_mark"'], "tests": ["1"]}  # filters kept
        link.click()
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
        titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .result-title")]
        assert titles == ["tools/needle.py:1-2"]
        assert (
            browser.find_element(By.ID, "q").get_attribute("value") == 'lang:python "needle_mark"'
        )


def test_a_path_filter_that_matches_no_file_offers_the_nearest_path(
    live_server: Any, transactional_db: Any
) -> None:
    """A filter that matched no file is not an error: the empty answer says which, and its
    suggestion searches again with the path that exists, the page's filters kept."""
    indexed_repository(
        "acme/tools",
        [SourceDoc("tools/needle.py", [Piece("def find():\n    return 'needle_mark'\n", "find")])],
    )
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=%22needle_mark%22+file%3Atools%2Fneedel.py&tests=1")
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .notice"))
        notice = browser.find_element(By.CSS_SELECTOR, "#results .no-results .notice")
        assert notice.text.startswith(
            "file:tools/needel.py matches no indexed file in the repository searched"
        )
        link = notice.find_element(By.CSS_SELECTOR, "a.suggestion")
        assert link.text == 'Search for "needle_mark" file:tools/needle.py'
        link.click()
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
        titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .result-title")]
        assert titles == ["tools/needle.py:1-2"]
        assert browser.find_element(By.ID, "q").get_attribute("value") == (
            '"needle_mark" file:tools/needle.py'
        )
        assert parse_qs(urlparse(browser.current_url).query)["tests"] == ["1"]  # filters kept
