"""Fixtures of the browser tests (tests/frontend/browser.py drives Debian's Chromium)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.frontend.browser import chromium


@pytest.fixture  # one per test: a slow answer to the last test's page cannot clear this one's session
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver
