"""The Repositories page says how fresh each index is (headless Chromium, live server).

A repository indexed four minutes ago whose remote has moved on reads "indexed 4 min ago at
abc1234 — the remote has moved on"; one whose last check failed shows the error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from indexing.models import Repository
from tests.factories import indexed_repository
from tests.frontend.browser import wait_until
from tests.frontend.signed_in import sign_in_browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

INDEXED = "abc1234" + "0" * 33
MOVED = "def5678" + "0" * 33


def commit_cell(driver: WebDriver, name: str) -> str:
    for row in driver.find_elements(By.CSS_SELECTOR, "#repo-rows tr"):
        if name in row.find_element(By.CSS_SELECTOR, "td[data-label=Repository]").text:
            return row.find_element(By.CSS_SELECTOR, "td[data-label=Commit]").text
    return ""


def test_the_list_says_when_and_at_which_commit_and_whether_the_remote_moved_on(
    live_server: Any, transactional_db: Any, browser: WebDriver
) -> None:
    sign_in_browser(browser, live_server.url)
    now = timezone.now()
    behind = indexed_repository(
        "acme/behind", ["x = 1"], url="https://git.example.com/acme/behind.git", commit=INDEXED
    )
    Repository.objects.filter(pk=behind.pk).update(
        last_indexed_at=now - timedelta(minutes=4, seconds=10),
        remote_tip=MOVED,
        last_polled_at=now,
    )
    fresh = indexed_repository(
        "acme/fresh", ["y = 2"], url="https://git.example.com/acme/fresh.git", commit=INDEXED
    )
    Repository.objects.filter(pk=fresh.pk).update(remote_tip=INDEXED, last_polled_at=now)
    failing = indexed_repository(
        "acme/gone", ["z = 3"], url="https://git.example.com/acme/gone.git", commit=INDEXED
    )
    Repository.objects.filter(pk=failing.pk).update(
        poll_error="the server at git.example.com is unavailable (HTTP 503)", poll_failures=2
    )

    browser.get(f"{live_server.url}/repos/")
    wait_until(browser, lambda d: "moved on" in commit_cell(d, "acme/behind"))

    assert "indexed 4 min ago at abc1234" in commit_cell(browser, "acme/behind")
    assert "the remote has moved on (def5678)" in commit_cell(browser, "acme/behind")
    assert "moved on" not in commit_cell(browser, "acme/fresh")
    assert "up to date, checked just now" in commit_cell(browser, "acme/fresh")
    assert "HTTP 503" in commit_cell(browser, "acme/gone")
