"""Go to definition and find references from a search hit, in headless Chromium (issue 29 item
4): an exact hit's matched identifier and a hybrid hit's defined name link to the definition
(opened at the indexed commit) and to the references page, whose places are permalinks too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.frontend.browser import chromium, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

FILES = [
    SourceDoc(
        "src/retry.py",
        [Piece("def retry_with_backoff(fn):\n    return fn()\n", "retry_with_backoff")],
    ),
    SourceDoc(
        "src/client.py",
        [
            Piece(
                "def fetch_page(url):\n    return retry_with_backoff(lambda: url)\n",
                "fetch_page",
                calls=["retry_with_backoff"],
            )
        ],
    ),
]


@contextmanager
def searched(live_server: Any, query: str, path: str) -> Iterator[tuple[Any, Any, str]]:
    """(browser, the result card of ``path``, the indexed commit) of a search for ``query``
    (URL-encoded) over the corpus, indexed with a real clone, as a reader."""
    commit = indexed_repository("acme/retry", FILES, clone=True).last_indexed_commit
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q={query}")
        wait_until(browser, lambda d: path in d.find_element(By.ID, "results").text)
        cards = browser.find_elements(By.CSS_SELECTOR, "#results .result")
        found = [card for card in cards if path in card.find_element(By.CSS_SELECTOR, "h2").text]
        assert found, [card.text[:80] for card in cards]
        yield browser, found[0], commit


def test_an_exact_hit_goes_to_the_definition_of_what_it_matched(
    live_server: Any, transactional_db: Any
) -> None:
    with searched(live_server, "%22retry_with_backoff%22", "src/client.py") as (
        browser,
        card,
        commit,
    ):
        assert len(browser.find_elements(By.CSS_SELECTOR, "#results .result")) == 2
        assert card.find_element(By.CSS_SELECTOR, ".hit-names code").text == "retry_with_backoff"
        card.find_element(By.CSS_SELECTOR, "a.go-definition").click()
        wait_until(browser, lambda d: "/-/blob/" in d.current_url)
        # the one definition, opened at the indexed commit and its lines
        assert f"/repos/acme/retry/-/blob/{commit}/src/retry.py#L1-L2" in browser.current_url
        wait_until(
            browser, lambda d: "def retry_with_backoff" in d.find_element(By.TAG_NAME, "main").text
        )


def test_a_hybrid_hit_finds_the_references_of_the_name_it_defines(
    live_server: Any, transactional_db: Any
) -> None:
    with searched(live_server, "retry+with+backoff&vector=0", "src/retry.py") as (
        browser,
        card,
        commit,
    ):
        names = [n.text for n in card.find_elements(By.CSS_SELECTOR, ".hit-names code")]
        assert names == ["retry_with_backoff"]
        card.find_element(By.CSS_SELECTOR, "a.find-references").click()
        wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".symbol-results a"))
        assert "References to retry_with_backoff" in browser.find_element(By.TAG_NAME, "h1").text
        links = browser.find_elements(By.CSS_SELECTOR, ".symbol-results a.symbol-location")
        assert [a.text for a in links] == ["acme/retry · src/client.py:2"]
        href = links[0].get_attribute("href")
        assert href.endswith(f"/repos/acme/retry/-/blob/{commit}/src/client.py#L2")
