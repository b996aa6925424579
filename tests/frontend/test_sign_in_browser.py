"""Signing in, the pages' policy and the Tokens page in a real browser (headless Chromium).

The sign-in page is driven as a person would; the other pages are opened with the session of a
``force_login`` and must run without a single refusal from the Content-Security-Policy.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from django.contrib.auth.models import User
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from accounts.models import ApiToken
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.accounts_support import make_account, token_client
from tests.factories import indexed_repository
from tests.frontend.browser import csp_violations, screenshot, wait_until
from tests.frontend.signed_in import PASSWORD, sign_in_browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
def repository(transactional_db: Any) -> Iterator[Repository]:
    repository = indexed_repository(
        "acme/browser",
        ["def parse_header(line):\n    return line.split(':')", "def retry():\n    pass"],
        clone=True,
    )
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def test_sign_in_through_the_page_and_back_to_the_page_asked_for(
    live_server: Any, browser: WebDriver, transactional_db: Any
) -> None:
    browser.delete_all_cookies()
    make_account("write", username="erin")
    browser.get(f"{live_server.url}/repos/")
    assert "/sign-in?next=" in browser.current_url
    assert unquote(browser.current_url).endswith("next=/repos/")
    assert not browser.find_elements(By.CSS_SELECTOR, "nav[aria-label=Main]")
    browser.find_element(By.NAME, "username").send_keys("erin")
    browser.find_element(By.NAME, "password").send_keys("not the password")
    browser.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    error = wait_until(browser, lambda d: d.find_elements(By.ID, "sign-in-error"))[0]
    assert "correct username and password" in error.text
    screenshot(browser, "sign-in")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "#sign-in-form button[type=submit]").click()
    wait_until(browser, lambda d: d.current_url == f"{live_server.url}/repos/")
    account = browser.find_element(By.CSS_SELECTOR, ".account").text
    assert "erin" in account and "write" in account
    assert browser.find_element(By.ID, "add-form").is_displayed()
    assert csp_violations(browser) == []

    browser.find_element(By.CSS_SELECTOR, ".sign-out button").click()
    wait_until(browser, lambda d: d.current_url.endswith("/sign-in"))
    browser.get(f"{live_server.url}/repos/")
    assert "/sign-in?next=" in browser.current_url


def test_a_read_account_sees_no_write_controls(
    live_server: Any, browser: WebDriver, repository: Repository
) -> None:
    sign_in_browser(browser, live_server.url, "read")
    browser.get(f"{live_server.url}/repos/")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#repo-rows tr"))
    assert not browser.find_elements(By.ID, "add-form")
    assert not browser.find_elements(By.CSS_SELECTOR, "#repo-rows button")
    assert "write" in browser.find_element(By.ID, "read-only").text
    browser.get(f"{live_server.url}/settings/")
    wait_until(browser, lambda d: d.find_element(By.ID, "config-form").is_displayed())
    assert not browser.find_element(By.ID, "provider").is_enabled()
    assert not browser.find_elements(By.CSS_SELECTOR, "#config-form button[type=submit]")


def page_without_violations(driver: WebDriver, url: str, ready: str) -> None:
    driver.get(url)
    wait_until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ready))
    assert csp_violations(driver) == [], url


def test_every_page_runs_without_a_policy_violation(
    live_server: Any, browser: WebDriver, repository: Repository
) -> None:
    root = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    sign_in_browser(browser, live_server.url, user=root)
    base = live_server.url
    # A search, whose results arrive as HTML put into the page.
    page_without_violations(browser, f"{base}/?q=parse_header&vector=0", "#results .result")
    page_without_violations(browser, f"{base}/ask/", "#ask-form")
    page_without_violations(browser, f"{base}/repos/", "#repo-rows tr")
    page_without_violations(browser, f"{base}/settings/", "#health dt")
    page_without_violations(browser, f"{base}/tokens/", "#token-form")
    page_without_violations(browser, f"{base}/audit/", "#audit-filters")
    path = repository.files.first().path
    page_without_violations(browser, f"{base}/repos/{repository.pk}/file?path={path}", ".code .nf")
    page_without_violations(browser, f"{base}/no-such-page", ".notice")
    # The admin, its scripted widgets included, and the Swagger UI, fully drawn.
    page_without_violations(browser, f"{base}/admin/", "#content-main")
    page_without_violations(browser, f"{base}/admin/auth/user/add/", "#user_form")
    page_without_violations(browser, f"{base}/admin/indexing/repository/?q=acme", "#result_list")
    page_without_violations(browser, f"{base}/api/docs", ".swagger-ui .opblock")
    browser.get(f"{base}/sign-in")  # signed in: sent on to the search page
    browser.delete_all_cookies()
    page_without_violations(browser, f"{base}/sign-in", "#sign-in-form")
    page_without_violations(browser, f"{base}/admin/login/", "#login-form")
    # The recorder does see a refusal: markup with inline style and script, put in by a script.
    browser.execute_script(
        "document.body.insertAdjacentHTML('beforeend', "
        '\'<p style="color: red">x</p><img src="data:," onerror="window.ran = 1">\')'
    )
    wait_until(browser, lambda d: " ".join(csp_violations(d)).count("-src-attr") >= 2)
    refused = " ".join(csp_violations(browser))
    assert "style-src-attr" in refused and "script-src-attr" in refused
    assert browser.execute_script("return window.ran") is None


def test_a_new_token_is_shown_once_copied_and_revoked(
    live_server: Any, browser: WebDriver, transactional_db: Any
) -> None:
    user = sign_in_browser(browser, live_server.url, "write")
    browser.get(f"{live_server.url}/tokens/")
    wait_until(browser, lambda d: d.find_element(By.ID, "token-empty").is_displayed())
    browser.find_element(By.ID, "token-name").send_keys("laptop")
    browser.find_element(By.CSS_SELECTOR, "#token-scope option[value=write]").click()
    browser.find_element(By.ID, "token-expiry").send_keys("30")
    browser.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    shown = wait_until(
        browser, lambda d: d.find_element(By.ID, "new-token-value").get_attribute("value")
    )
    assert shown.startswith("rs_")
    token = ApiToken.objects.get(user=user)
    assert (token.name, token.scope, token.prefix) == ("laptop", "write", shown[:8])
    row = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#token-rows tr"))[0]
    assert "laptop" in row.text and token.prefix in row.text and "active" in row.text
    assert shown not in row.text
    browser.find_element(By.ID, "copy-token").click()
    wait_until(browser, lambda d: d.find_element(By.ID, "copy-status").text)
    assert "Copied" in browser.find_element(By.ID, "copy-status").text
    screenshot(browser, "tokens")
    assert csp_violations(browser) == []

    # Never again: not after "Done", not in a reload, not in the page's source.
    browser.find_element(By.ID, "dismiss-token").click()
    assert not browser.find_element(By.ID, "new-token").is_displayed()
    assert browser.find_element(By.ID, "new-token-value").get_attribute("value") == ""
    browser.refresh()
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#token-rows tr"))
    assert shown not in browser.page_source
    assert not browser.find_element(By.ID, "new-token").is_displayed()

    browser.find_element(By.CSS_SELECTOR, "#token-rows button[data-action=revoke]").click()
    browser.find_element(By.ID, "confirm-ok").click()
    wait_until(
        browser, lambda d: "revoked" in d.find_element(By.CSS_SELECTOR, "#token-rows tr").text
    )
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert not browser.find_elements(By.CSS_SELECTOR, "#token-rows button[data-action=revoke]")


def test_the_audit_page_lists_writes_newest_first_and_filters_them(
    live_server: Any, browser: WebDriver, transactional_db: Any
) -> None:
    writer = make_account("write", username="wendy")
    for name in ("ci", "laptop"):
        assert (
            token_client(user=writer).post("/api/tokens", {"name": name}, format="json").status_code
            == 201
        )
    token_client(user=writer).delete("/api/tokens/999999")  # refused: not one of hers
    sign_in_browser(browser, live_server.url, "admin")
    browser.get(f"{live_server.url}/audit/?actor=wendy&action=token.*")
    rows = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#audit-rows tr"))
    texts = [row.text for row in rows]
    assert len(texts) == 3 and all("wendy" in text for text in texts)
    assert "token.revoke" in texts[0] and "refused" in texts[0]  # newest first
    assert "token.create" in texts[2] and "ok" in texts[2]
    assert browser.find_element(By.ID, "audit-actor").get_attribute("value") == "wendy"
    assert csp_violations(browser) == []
    browser.get(f"{live_server.url}/audit/?actor=nobody")
    wait_until(browser, lambda d: d.find_element(By.ID, "audit-empty").is_displayed())


def test_anonymous_read_searches_and_lists_without_an_account(
    live_server: Any, browser: WebDriver, repository: Repository, settings: Any
) -> None:
    settings.REPO_SEARCH_ANONYMOUS_READ = True
    browser.delete_all_cookies()
    browser.get(f"{live_server.url}/?q=parse_header&vector=0")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    assert "parse_header" in browser.find_element(By.ID, "results").text
    assert browser.find_element(By.CSS_SELECTOR, ".sign-in-link").is_displayed()
    browser.get(f"{live_server.url}/repos/")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#repo-rows tr"))
    assert not browser.find_elements(By.ID, "add-form")
    assert not browser.find_elements(By.CSS_SELECTOR, "#repo-rows button")
    assert "sign in" in browser.find_element(By.ID, "read-only").text
    browser.get(f"{live_server.url}/tokens/")
    assert "/sign-in?next=" in browser.current_url
