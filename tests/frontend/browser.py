"""Headless Chromium from Debian's packages, driven by Selenium, for the browser tests.

``scripts/ensure_test_packages.sh`` installs ``chromium`` and ``chromium-driver``; nothing is
downloaded at run time (Selenium Manager is never asked, because both paths are given).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
_ROOT = Path(__file__).resolve().parents[2]
# `make screenshots` refreshes the README's pictures; ordinary runs keep theirs out of the tree.
SCREENSHOTS = (
    _ROOT / "docs" / "screenshots"
    if os.environ.get("REPOSEARCH_SCREENSHOTS")
    else _ROOT / ".pytest_cache" / "screenshots"
)
WIDE = (1280, 900)
NARROW = (390, 844)


RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + (event.blockedURI || "inline") +
    " at " + (event.sourceFile || document.location.pathname) + ":" + event.lineNumber);
});
"""


def csp_violations(driver: WebDriver) -> list[str]:
    """What the current page's Content-Security-Policy refused so far."""
    return list(driver.execute_script("return window.__cspViolations || []"))


@contextmanager
def chromium() -> Iterator[WebDriver]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail(
            "the browser tests need Debian's chromium and chromium-driver: "
            "run scripts/ensure_test_packages.sh",
            pytrace=False,
        )
    with tempfile.TemporaryDirectory(prefix="reposearch-chromium-") as profile:
        options = Options()
        options.binary_location = str(CHROMIUM)
        for argument in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            f"--window-size={WIDE[0]},{WIDE[1]}",
            "--lang=en-US",
        ):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        driver.set_page_load_timeout(30)
        # Every page records what its Content-Security-Policy refused (csp_violations reads it);
        # a script the DevTools protocol adds is not itself subject to the policy.
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_CSP_VIOLATIONS}
        )
        try:
            yield driver
        finally:
            driver.quit()


def wait_until(
    driver: WebDriver, condition: Callable[[WebDriver], Any], seconds: float = 15
) -> Any:
    """Polls ``condition`` until it returns something truthy; on timeout, fails with the page's
    address, visible text and console errors (what one needs to see why)."""
    try:
        # Live pages re-render rows while we poll; a node replaced mid-read is retried.
        return WebDriverWait(
            driver,
            seconds,
            poll_frequency=0.1,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(condition)
    except TimeoutException:
        text = driver.find_element(By.TAG_NAME, "body").text[:1500]
        try:
            console = [entry["message"] for entry in driver.get_log("browser")]
        except WebDriverException:
            console = []
        pytest.fail(
            f"timed out after {seconds} s on {driver.current_url}\n--- page ---\n{text}"
            f"\n--- console ---\n" + "\n".join(console),
            pytrace=True,
        )


def screenshot(driver: WebDriver, name: str, size: tuple[int, int] = WIDE) -> Path:
    """Saves the page as ``<SCREENSHOTS>/<name>.png``, as tall as its content (max 2400 px)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size[0], min(max(int(height) + 120, size[1]), 2400))
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(*size)
    return path


def text_of(driver: WebDriver, css: str) -> str:
    return " ".join(node.text for node in driver.find_elements(By.CSS_SELECTOR, css))
