"""The search and ask pages' LLM options and the one-line pipeline, in headless Chromium.

Against the live server, the real ``/api/search`` and ``/api/health`` and the test model server
(``tests/model_server.py``): with the chat model unreachable the LLM toggles are disabled and say
why, and come back once health sees the model again; the pipeline of a real search is one line
until opened, stays open after a reload, and goes below the results on a phone.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

import llm.config
import llm.health
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.ask import corpus
from tests.frontend.browser import NARROW, WIDE, screenshot, wait_until
from tests.frontend.signed_in import sign_in_browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.fixture
def shop(transactional_db: Any, settings: Any, tmp_path: Path) -> Iterator[Repository]:
    """A real clone and live chunk rows, committed (the live server reads them)."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = corpus.build_repository()
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def point_chat_at(settings: Any, url: str) -> None:
    settings.LLM_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_PROVIDER = "local"
    settings.LLM_BASE_URL = url
    settings.LLM_CHAT_MODEL = "llama3.2"
    llm.config.invalidate()
    llm.health.clear_cache()


@pytest.fixture
def chat_down(settings: Any) -> Iterator[None]:
    point_chat_at(settings, closed_port_url())
    yield
    llm.config.invalidate()
    llm.health.clear_cache()


def test_llm_toggles_are_disabled_with_the_reason_while_the_chat_model_is_down(
    live_server: Any,
    browser: WebDriver,
    shop: Repository,
    chat_down: None,
    settings: Any,
    model_server: Any,
) -> None:
    sign_in_browser(browser, live_server.url)
    # A shared link asks for rerank: the page waits for health, so the search runs without it.
    browser.get(f"{live_server.url}/?q=configure+pool&rerank=1")
    rerank = browser.find_element(By.CSS_SELECTOR, "input[name=rerank]")
    wait_until(browser, lambda d: rerank.get_attribute("disabled") is not None)
    expand = browser.find_element(By.CSS_SELECTOR, "input[name=expand]")
    assert expand.get_attribute("disabled") is not None
    assert not rerank.is_selected()
    label = rerank.find_element(By.XPATH, "..")
    assert "unreachable" in label.get_attribute("title")
    hint = browser.find_element(By.ID, "llm-hint")
    assert hint.is_displayed()
    assert "Rerank and query expansion are off" in hint.text and "llama3.2" in hint.text
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    rerank_step = browser.find_element(By.CSS_SELECTOR, ".pipeline-line .step[data-stage=rerank]")
    assert rerank_step.get_attribute("data-status") == "skipped"  # not tried against a dead model
    screenshot(browser, "search-model-down")

    # The Ask page's HyDE option is off for the same reason, and the page says answers wait.
    browser.get(f"{live_server.url}/ask/")
    hyde = browser.find_element(By.CSS_SELECTOR, "input[name=hyde]")
    wait_until(browser, lambda d: hyde.get_attribute("disabled") is not None)
    assert "unreachable" in hyde.find_element(By.XPATH, "..").get_attribute("title")
    assert "No answers for now" in browser.find_element(By.ID, "model-warning").text

    # The model comes back: the search page's toggles follow health without a reload.
    browser.get(f"{live_server.url}/?q=configure+pool&rerank=1")
    wait_until(browser, lambda d: rerank_disabled(d))
    browser.execute_script("window.notReloaded = true")
    point_chat_at(settings, model_server.url)
    wait_until(browser, lambda d: not rerank_disabled(d), seconds=25)
    assert browser.execute_script("return window.notReloaded") is True
    rerank = browser.find_element(By.CSS_SELECTOR, "input[name=rerank]")
    assert rerank.is_selected()  # what the link asked for comes back with the model
    assert not browser.find_element(By.ID, "llm-hint").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "input[name=rerank]").find_element(
        By.XPATH, ".."
    ).get_attribute("title") in ("", None)

    # No chat model configured at all: the same, saying so.
    settings.LLM_PROVIDER = "none"
    llm.config.invalidate()
    llm.health.clear_cache()
    browser.get(f"{live_server.url}/")
    wait_until(browser, lambda d: rerank_disabled(d))
    assert "LLM_PROVIDER=none" in browser.find_element(By.ID, "llm-hint").text


def rerank_disabled(driver: WebDriver) -> bool:
    rerank = driver.find_element(By.CSS_SELECTOR, "input[name=rerank]")
    return rerank.get_attribute("disabled") is not None


def test_the_pipeline_is_one_line_until_opened_and_stays_open_after_a_reload(
    live_server: Any, browser: WebDriver, shop: Repository, settings: Any, model_server: Any
) -> None:
    sign_in_browser(browser, live_server.url)
    point_chat_at(settings, model_server.url)
    model_server.chat_handler = lambda messages: "banana bread"
    browser.get(f"{live_server.url}/")
    browser.execute_script("localStorage.removeItem('reposearch.pipeline')")
    browser.get(f"{live_server.url}/?q=configure+pool&rerank=1")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    drawing = browser.find_element(By.CSS_SELECTOR, "#results details.pipeline")
    assert drawing.get_attribute("open") is None  # collapsed by default
    line = drawing.find_element(By.CSS_SELECTOR, "summary")
    assert line.size["height"] < 40  # one line
    assert "full-text" in line.text and "ms" in line.text
    # The real rerank got answers without a verdict: the failure shows in the line, first.
    failed = line.find_element(By.CSS_SELECTOR, ".step[data-status=failed]")
    assert failed.get_attribute("data-stage") == "rerank" and "failed" in failed.text
    assert failed.location["x"] < line.find_element(By.CSS_SELECTOR, ".step-ran").location["x"]
    assert "verdict" in failed.get_attribute("title")
    assert not drawing.find_element(By.CSS_SELECTOR, ".stage").is_displayed()
    first_result = browser.find_element(By.CSS_SELECTOR, "#results .result")
    assert first_result.location["y"] - line.location["y"] < 120  # results start right below

    line.click()
    wait_until(browser, lambda d: drawing.find_element(By.CSS_SELECTOR, ".stage").is_displayed())
    assert len(drawing.find_elements(By.CSS_SELECTOR, ".pipeline-columns .stage")) >= 4
    columns = drawing.find_elements(By.CSS_SELECTOR, ".pipeline-column")
    # One row, even with the long failure text: the columns overlap vertically, left to right.
    tops = [column.location["y"] for column in columns]
    bottoms = [column.location["y"] + column.size["height"] for column in columns]
    assert max(tops) < min(bottoms)
    xs = [column.location["x"] for column in columns]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    screenshot(browser, "search-pipeline-open")

    browser.refresh()
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    drawing = browser.find_element(By.CSS_SELECTOR, "#results details.pipeline")
    assert drawing.get_attribute("open") is not None  # remembered
    assert drawing.find_element(By.CSS_SELECTOR, ".stage").is_displayed()

    # On a phone the results come first and the pipeline goes below them.
    browser.find_element(By.CSS_SELECTOR, "#results details.pipeline summary").click()
    browser.set_window_size(*NARROW)
    try:
        last = browser.find_elements(By.CSS_SELECTOR, "#results .result")[-1]
        drawing = browser.find_element(By.CSS_SELECTOR, "#results details.pipeline")
        assert drawing.location["y"] > last.location["y"]
        first = browser.find_element(By.CSS_SELECTOR, "#results .result")
        assert first.location["y"] < NARROW[1]  # the first result is above the fold
    finally:
        browser.set_window_size(*WIDE)
