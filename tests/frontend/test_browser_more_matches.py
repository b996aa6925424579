"""'Show more matches' on an exact hit, in headless Chromium: the file's next matching lines are
read (``file_path`` + ``match_offset``) and appended to its card until none are left."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.frontend.browser import chromium, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_show_more_matches_appends_the_rest_of_the_file(
    live_server: Any, transactional_db: Any
) -> None:
    body = "".join(f"value_{n} = 'needle_mark'\n" for n in range(1, 41))
    indexed_repository(
        "many",
        [
            SourceDoc("pkg/many.py", [Piece(body, "")]),
            SourceDoc("pkg/one.py", [Piece("x = 'needle_mark'\n", "")]),
        ],
    )
    with chromium() as browser:
        sign_in_browser(browser, live_server.url, "read")
        browser.get(f"{live_server.url}/?q=%22needle_mark%22")
        wait_until(
            browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .result")) == 2
        )
        card = browser.find_elements(By.CSS_SELECTOR, "#results .result")[0]
        assert "pkg/many.py" in card.text and "40 matching lines" in card.text

        def numbers() -> list[int]:
            cells = card.find_elements(By.CSS_SELECTOR, ".snippet tr.hit .ln")
            return [int(cell.text) for cell in cells]

        assert len(numbers()) < 40
        clicks = 0
        while card.find_elements(By.CSS_SELECTOR, "button.more-matches"):
            before = len(numbers())
            card.find_element(By.CSS_SELECTOR, "button.more-matches").click()
            wait_until(browser, lambda _driver: len(numbers()) > before)  # noqa: B023 - waited on at once
            clicks += 1
            assert clicks < 10
        assert numbers() == list(range(1, 41))  # every line once, in order
        other = browser.find_elements(By.CSS_SELECTOR, "#results .result")[1]
        assert [e.text for e in other.find_elements(By.CSS_SELECTOR, ".snippet tr.hit .ln")] == [
            "1"
        ]
