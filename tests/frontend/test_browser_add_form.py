"""The Repositories page's add form in a real browser: refused URLs explained in plain words, and
local paths (with or without ``REPO_SEARCH_ALLOW_LOCAL_PATHS``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from indexing.models import Repository
from tests.frontend.browser import screenshot, text_of, wait_until
from tests.frontend.signed_in import sign_in_browser
from tests.frontend.test_browser import FILES, wait_for_ready
from tests.indexing.git_server import commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def test_a_refused_url_is_explained_in_plain_words(
    live_server: Any, browser: WebDriver, settings: Any
) -> None:
    sign_in_browser(browser, live_server.url)
    settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS = False  # the check runs in the web process
    browser.get(f"{live_server.url}/repos/")
    browser.find_element(By.ID, "repo-url").send_keys("http://10.0.0.1/x.git")
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    error = wait_until(
        browser,
        lambda d: (
            d.find_element(By.ID, "add-error")
            if d.find_element(By.ID, "add-error").is_displayed()
            else None
        ),
    )
    assert "host refused: resolves to a private address 10.0.0.1" in error.text
    assert not Repository.objects.exists()
    screenshot(browser, "repositories-refused")


def test_a_local_path_is_added_from_the_form_when_the_server_allows_it(
    live_server: Any,
    celery_worker_process: Any,
    browser: WebDriver,
    settings: Any,
    tmp_path: Path,
) -> None:
    sign_in_browser(browser, live_server.url)
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True  # the test worker allows them too
    mirror = tmp_path / "mirrors" / "demo.git"
    mirror.parent.mkdir()
    commit_files(init_bare_repo(str(mirror)), FILES, message="first")
    browser.get(f"{live_server.url}/repos/")
    url_box = browser.find_element(By.ID, "repo-url")
    assert url_box.get_attribute("type") == "text"  # not type=url: a path must be typeable
    hint = browser.find_element(By.ID, "add-hint").text
    assert "https://" in hint and "file://" in hint and "local path" in hint
    url_box.send_keys(str(mirror))
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    wait_until(browser, lambda d: "Added" in d.find_element(By.ID, "repo-status").text)
    assert not browser.find_element(By.ID, "add-error").is_displayed()
    repository = Repository.objects.get()
    assert repository.url == mirror.as_uri()  # the path, as the API normalises it
    wait_for_ready(str(repository.pk))
    wait_until(browser, lambda d: "done" in text_of(d, "#repo-rows td.job"), seconds=30)

    # A file:// URL is typed as easily.
    other = tmp_path / "mirrors" / "other.git"
    commit_files(init_bare_repo(str(other)), {"a.py": "A = 1\n"}, message="first")
    url_box.send_keys(other.as_uri())
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    wait_until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#repo-rows tr")) == 2)
    assert not browser.find_element(By.ID, "add-error").is_displayed()
    assert Repository.objects.count() == 2
    # Its job ends before the test does: the teardown's TRUNCATE deadlocked with the worker's
    # transaction when it was still storing (seen once in CI).
    added = Repository.objects.exclude(pk=repository.pk).get()
    wait_for_ready(str(added.pk))


def test_without_local_paths_the_hint_names_the_switch(
    live_server: Any, browser: WebDriver, settings: Any, tmp_path: Path
) -> None:
    sign_in_browser(browser, live_server.url)
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = False
    browser.get(f"{live_server.url}/repos/")
    assert "REPO_SEARCH_ALLOW_LOCAL_PATHS=1" in browser.find_element(By.ID, "add-hint").text
    browser.find_element(By.ID, "repo-url").send_keys(str(tmp_path))
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    error = wait_until(
        browser,
        lambda d: (
            d.find_element(By.ID, "add-error")
            if d.find_element(By.ID, "add-error").is_displayed()
            else None
        ),
    )
    assert "local paths are not allowed" in error.text  # the API's refusal, not the browser's
    assert not Repository.objects.exists()
