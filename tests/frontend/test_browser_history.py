"""Browsing like a code host in headless Chromium: from a file page's tree sidebar to its
history, the file at an older commit, its blame and back to a directory with its README; no
Content-Security-Policy violation on the way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from indexing.clone_paths import repository_dir
from tests.frontend.browser import chromium, csp_violations, screenshot, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.indexing.git_history_support import PATH, build_source, clone, git_blame, git_log
from tests.indexing.real_run import fetch_and_index

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def test_sidebar_history_blame_and_readme(
    live_server: Any, transactional_db: Any, settings: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    # The stages run here; with real commits (transactional_db) the queued fetch task would
    # reach the broker, and a worker another test left running could take the job over.
    monkeypatch.setattr("indexing.services.repositories.enqueue_fetch", lambda job_id: None)
    source = build_source(tmp_path)
    repository = fetch_and_index(source).repository
    repository.refresh_from_db()
    commit = repository.last_indexed_commit
    directory = repository_dir(repository.pk)
    shutil.rmtree(directory)
    clone(source, directory, depth=None)  # the whole history, at the indexed commit
    log, owners = git_log(directory, commit), git_blame(directory, commit)
    at = f"{live_server.url}/repos/acme/demo/-"
    try:
        with chromium() as browser:
            sign_in_browser(browser, live_server.url, "read")
            browser.get(f"{at}/blob/HEAD/{PATH}")
            tree = browser.find_element(By.CSS_SELECTOR, "[data-file-tree]")
            assert tree.is_displayed()
            names = [row.text for row in tree.find_elements(By.CSS_SELECTOR, "li")]
            assert names == ["src/", "app/", "core.py", "README.md"]
            screenshot(browser, "file-tree")

            browser.find_element(By.CSS_SELECTOR, "[data-history-link]").click()
            wait_until(browser, lambda d: "/-/commits/" in d.current_url)
            # The new page may still be arriving when its address changes: wait for its rows.
            wait_until(
                browser,
                lambda d: len(d.find_elements(By.CSS_SELECTOR, ".history-commit")) >= len(log),
            )
            rows = browser.find_elements(By.CSS_SELECTOR, ".history-commit")
            assert len(rows) == len(log)
            assert "Add core" in rows[-1].text and "Ada Lovelace" in rows[-1].text
            screenshot(browser, "file-history")
            rows[1].find_element(By.CSS_SELECTOR, "a.commit").click()
            wait_until(browser, lambda d: f"/-/blob/{log[1]}/" in d.current_url)
            assert browser.find_element(By.CSS_SELECTOR, ".not-indexed").is_displayed()

            browser.get(f"{at}/blob/HEAD/{PATH}")
            browser.find_element(By.CSS_SELECTOR, "[data-blame-link]").click()
            wait_until(browser, lambda d: "/-/blame/" in d.current_url)
            wait_until(
                browser,
                lambda d: len(d.find_elements(By.CSS_SELECTOR, ".blame-code tr")) >= len(owners),
            )
            lines = browser.find_elements(By.CSS_SELECTOR, ".blame-code tr")
            assert len(lines) == len(owners)
            first = lines[0].find_element(By.CSS_SELECTOR, ".blame-commit a")
            assert first.get_attribute("href") == f"{at}/blob/{owners[0]}/{PATH}"
            screenshot(browser, "file-blame")
            assert csp_violations(browser) == []

            browser.get(f"{at}/blob/HEAD/{PATH}")
            browser.find_element(By.CSS_SELECTOR, "[data-file-tree] a[href$='/src']").click()
            wait_until(browser, lambda d: d.current_url.endswith(f"/-/tree/{commit}/src"))
            browser.get(f"{at}/tree/HEAD")
            readme = browser.find_element(By.CSS_SELECTOR, "[data-readme]")
            assert readme.text.startswith("Demo")
            screenshot(browser, "tree-readme")
            assert csp_violations(browser) == []
    finally:
        shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)
