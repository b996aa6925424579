"""The file page in headless Chromium: Shift+click line ranges, the copy-permalink button, go to
definition and find references through the panel, tree pages with breadcrumbs."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from indexing.clone_paths import repository_dir
from tests.factories import Piece, SourceDoc, indexed_repository
from tests.frontend.browser import chromium, csp_violations, screenshot, wait_until
from tests.frontend.signed_in import sign_in_browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

FILES = [
    SourceDoc(
        "src/shop/cart.py",
        [
            Piece("def add_item(cart, item):\n    cart.append(item)\n    return cart", "add_item"),
            Piece(
                "def checkout(cart):\n    add_item(cart, 'receipt')\n    return len(cart)",
                "checkout",
                calls=["add_item", "len"],
            ),
        ],
        gap=1,
    ),
    SourceDoc(
        "src/shop/api.py",
        [
            Piece(
                "from shop.cart import add_item\n\ndef handle(cart, item):\n    return add_item(cart, item)",
                "handle",
                calls=["add_item"],
            )
        ],
    ),
]


def marked(browser: Any) -> list[str]:
    return [row.get_attribute("id") for row in browser.find_elements(By.CSS_SELECTOR, "tr.hit")]


def test_lines_permalinks_definitions_and_references(
    live_server: Any, transactional_db: Any, settings: Any, tmp_path: Any
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    shop = indexed_repository("acme/shop", FILES, clone=True)
    commit = shop.last_indexed_commit
    base = f"{live_server.url}/repos/acme/shop/-/blob/{commit}"
    try:
        with chromium() as browser:
            sign_in_browser(browser, live_server.url, "read")
            browser.get(f"{live_server.url}/repos/acme/shop/-/blob/HEAD/src/shop/api.py#L3-L4")
            assert marked(browser) == ["L3", "L4"]

            # Click a line, Shift+click another: the range is marked and in the address.
            browser.find_element(By.CSS_SELECTOR, 'a[data-line="1"]').click()
            assert marked(browser) == ["L1"] and browser.current_url.endswith("#L1")
            target = browser.find_element(By.CSS_SELECTOR, 'a[data-line="3"]')
            ActionChains(browser).key_down(Keys.SHIFT).click(target).key_up(Keys.SHIFT).perform()
            assert marked(browser) == ["L1", "L2", "L3"] and browser.current_url.endswith("#L1-L3")

            # Copy permalink: the full commit, not HEAD, with the marked lines.
            browser.find_element(By.CSS_SELECTOR, "[data-copy-permalink]").click()
            button = browser.find_element(By.CSS_SELECTOR, "[data-copy-permalink]")
            wait_until(browser, lambda d: button.get_attribute("data-copied-url"))
            assert button.get_attribute("data-copied-url") == f"{base}/src/shop/api.py#L1-L3"
            assert browser.find_element(By.CSS_SELECTOR, "[data-copied]").text

            # Find references to add_item from its use in this file.
            name = browser.find_element(By.XPATH, "//tr[@id='L4']//span[text()='add_item']")
            name.click()
            panel = browser.find_element(By.CSS_SELECTOR, "[data-symbol-panel]")
            assert panel.is_displayed() and "add_item" in panel.text
            panel.find_element(By.CSS_SELECTOR, "[data-find-references]").click()
            wait_until(browser, lambda d: "3 references to add_item" in panel.text)
            locations = [a.text for a in panel.find_elements(By.CSS_SELECTOR, ".symbol-location")]
            assert locations == ["src/shop/api.py:1", "src/shop/api.py:4", "src/shop/cart.py:6"]
            screenshot(browser, "file-references")

            # Go to definition: one definition, so it opens at its lines.
            panel.find_element(By.CSS_SELECTOR, "[data-go-definition]").click()
            wait_until(browser, lambda d: "cart.py" in d.current_url)
            assert browser.current_url == f"{base}/src/shop/cart.py#L1-L3"
            assert marked(browser) == ["L1", "L2", "L3"]
            assert csp_violations(browser) == []

            # Breadcrumbs lead to the directory pages at the same commit.
            browser.find_element(By.LINK_TEXT, "shop").click()
            wait_until(browser, lambda d: "/-/tree/" in d.current_url)
            assert (
                browser.current_url == f"{live_server.url}/repos/acme/shop/-/tree/{commit}/src/shop"
            )
            names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".tree-listing td a")]
            assert names == ["..", "api.py", "cart.py"]
            browser.find_element(By.LINK_TEXT, "acme/shop").click()
            wait_until(browser, lambda d: d.current_url.endswith(f"/-/tree/{commit}"))
            assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".tree-dir a")] == [
                "src/"
            ]
            assert csp_violations(browser) == []
    finally:
        shutil.rmtree(repository_dir(shop.pk), ignore_errors=True)
