"""The Ask page in a real browser: headless Chromium, the live server and the test model server.

An indexed repository (``tests.ask.corpus``: a real bare clone and live chunk rows) is asked a
question; the test model server answers citing the snippet the prompt numbered for
``configure_pool``. The browser follows the ``[1]`` citation to the file view at the cited
lines and comes Back to the same answer without a second model call. With the model server
stopped, the page says so and still lists the retrieved sources. Screenshots go to
``docs/screenshots/ask*.png``.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

import llm.config  # noqa: F401 - corpus.chat_model calls llm.config.invalidate()
from indexing.clone_paths import repository_dir
from indexing.models import Chunk, Repository
from tests.ask import corpus
from tests.frontend.browser import NARROW, WIDE, screenshot, wait_until
from tests.frontend.signed_in import sign_in_browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

QUESTION = "where is the connection pool configured?"
SNIPPET_LABEL = re.compile(r"^\[(\d+)\] \S+ -- symbol (\S+)", re.M)
chat_model = corpus.chat_model  # the app's chat model pointed at the test model server


@pytest.fixture
def shop(transactional_db: Any, settings: Any, tmp_path: Path, chat_model: Any) -> Iterator[Any]:
    """The corpus committed for real (the live server reads it from another connection)."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = corpus.build_repository()
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def answer_citing_the_pool(messages: list[dict[str, Any]]) -> str:
    """The model's reply: cites configure_pool and read_pool_size by the prompt's numbers."""
    numbers = {symbol: n for n, symbol in SNIPPET_LABEL.findall(messages[-1]["content"])}
    time.sleep(0.6)  # long enough for the page's loading state to be seen
    return (
        f"The pool is built by `configure_pool` [{numbers['configure_pool']}], which reads its"
        f" size with read_pool_size [{numbers['read_pool_size']}]. <b>Not bold</b> [42]"
    )


def test_ask_and_follow_a_citation_to_the_cited_lines(
    live_server: Any, browser: WebDriver, shop: Repository, chat_model: Any
) -> None:
    sign_in_browser(browser, live_server.url)
    chat_model.chat_handler = answer_citing_the_pool
    browser.get(f"{live_server.url}/ask/")
    browser.execute_script("document.activeElement.blur()")
    ActionChains(browser).send_keys("/").perform()  # "/" focuses the question box
    box = browser.switch_to.active_element
    assert box.get_attribute("id") == "question"
    box.send_keys(QUESTION, Keys.ENTER)  # Enter asks

    # Loading: the button is busy and the status says what is happening.
    wait_until(browser, lambda d: d.find_element(By.ID, "ask-button").get_attribute("disabled"))
    assert "Asking" in browser.find_element(By.ID, "ask-status").text
    assert browser.find_element(By.ID, "ask-progress").is_displayed()

    cite = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".answer a.cite"))[0]
    assert "q=where+is+the+connection+pool+configured" in browser.current_url
    assert browser.find_element(By.ID, "ask-button").get_attribute("disabled") is None
    answer = browser.find_element(By.CSS_SELECTOR, ".answer-text")
    assert "The pool is built by configure_pool [1]" in answer.text
    assert "<b>Not bold</b>" in answer.text  # the model's markup is shown as text
    assert not answer.find_elements(By.TAG_NAME, "b")
    warnings = browser.find_element(By.CSS_SELECTOR, ".warnings").text
    assert "[42]" in warnings

    chunk = Chunk.objects.get(symbol="configure_pool", generation=shop.active_generation)
    first = browser.find_element(By.ID, "source-1")
    assert f"src/pool.py:{chunk.start_line}-{chunk.end_line}" in first.text
    assert "configure_pool" in first.text and "acme/shop" in first.text
    assert shop.last_indexed_commit[:7] in first.text
    upstream = first.find_element(By.CSS_SELECTOR, "a.upstream").get_attribute("href") or ""
    assert upstream.startswith(f"https://github.com/acme/shop/blob/{shop.last_indexed_commit}/")
    assert "read_pool_size" in browser.find_element(By.ID, "source-2").text
    stages = browser.find_elements(By.CSS_SELECTOR, ".pipeline .stage")
    assert "answer" in {stage.get_attribute("data-stage") for stage in stages}
    assert "total" in browser.find_element(By.CSS_SELECTOR, ".pipeline .timings").text
    screenshot(browser, "ask")
    browser.set_window_size(*NARROW)
    screenshot(browser, "ask-narrow", NARROW)
    browser.set_window_size(*WIDE)

    # The citation opens the file view at the cited lines.
    asked = len(chat_model.requests_to("/api/chat"))
    browser.find_element(By.CSS_SELECTOR, ".answer a.cite").click()
    # The old address the citation links redirects to the permalink; file.js marks the lines.
    wait_until(browser, lambda d: "/-/blob/" in d.current_url)
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hit"))
    lines = range(chunk.start_line, chunk.end_line + 1)
    hits = browser.find_elements(By.CSS_SELECTOR, "tr.hit")
    assert [hit.get_attribute("id") for hit in hits] == [f"L{n}" for n in lines]
    fragment = f"#L{chunk.start_line}" + (
        f"-L{chunk.end_line}" if chunk.end_line > chunk.start_line else ""
    )
    assert browser.current_url.endswith(fragment)
    assert browser.find_element(By.CSS_SELECTOR, ".file-path").text == "src/pool.py"

    # Back shows the same answer, without asking the model again.
    browser.back()
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".answer a.cite"))
    assert browser.find_element(By.ID, "question").get_attribute("value") == QUESTION
    assert len(chat_model.requests_to("/api/chat")) == asked
    assert cite  # the first citation was found before following it


def test_without_a_chat_model_the_page_says_so_and_lists_the_retrieved_sources(
    live_server: Any, browser: WebDriver, shop: Repository, chat_model: Any
) -> None:
    sign_in_browser(browser, live_server.url)
    chat_model.stop()
    browser.get(f"{live_server.url}/ask/?q=where+is+the+connection+pool+configured%3F&expand=1")
    failure = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".ask-failure"))[0]
    assert "No chat model answered" in failure.text
    assert browser.find_element(By.CSS_SELECTOR, "input[name=expand]").is_selected()
    assert "(503)" in browser.find_element(By.ID, "ask-status").text
    retrieved = browser.find_elements(By.CSS_SELECTOR, ".source-list.retrieved .source")
    assert retrieved and not browser.find_elements(By.CSS_SELECTOR, "a.cite")
    locations = " ".join(source.text for source in retrieved)
    assert "src/pool.py:" in locations
    link = retrieved[0].find_element(By.CSS_SELECTOR, "a.file-link").get_attribute("href") or ""
    assert link.startswith(
        f"{live_server.url}/repos/{shop.pk}/-/blob/{shop.last_indexed_commit}/src/"
    )
    assert browser.find_elements(By.CSS_SELECTOR, ".stage[data-stage=answer][data-status=failed]")
    screenshot(browser, "ask-no-model")


def test_an_api_error_is_explained_in_plain_words(live_server: Any, browser: WebDriver) -> None:
    sign_in_browser(browser, live_server.url)
    missing = "00000000-0000-4000-8000-000000000000"
    browser.get(f"{live_server.url}/ask/?q=anything&repo={missing}")
    error = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#answer .error"))[0]
    assert "could not be asked" in error.text and missing in error.text
    # The link's repository is kept (checked) in the options, not silently dropped.
    kept = browser.find_element(By.CSS_SELECTOR, f"input[name=repo][value='{missing}']")
    assert kept.is_selected()
    assert error.get_attribute("role") == "alert"
    assert browser.find_element(By.ID, "ask-button").get_attribute("disabled") is None


def test_the_answer_appears_as_the_model_writes_it(
    live_server: Any, browser: WebDriver, shop: Repository, chat_model: Any
) -> None:
    sign_in_browser(browser, live_server.url)
    release = threading.Event()
    written = "The pool is built by configure_pool, which reads its size first."

    def slow_answer(messages: list[dict[str, Any]]) -> str:
        release.wait(30)  # the model "thinks" until the page has shown the snippets
        return written + " See [1]."

    chat_model.chat_handler = slow_answer
    chat_model.drip = 0.15
    browser.get(f"{live_server.url}/ask/?q=where+is+the+connection+pool+configured%3F")
    # The retrieved snippets are listed before the model has written a word.
    found = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".live-sources .source"))
    assert "src/pool.py:" in " ".join(item.text for item in found)
    assert "snippets found" in browser.find_element(By.ID, "ask-status").text
    release.set()
    # Then the words, while the answer is still streaming (no verified citations yet).
    wait_until(browser, lambda d: len(d.find_element(By.CSS_SELECTOR, ".live-text").text) > 8)
    assert browser.find_elements(By.CSS_SELECTOR, ".answer.streaming")
    assert not browser.find_elements(By.CSS_SELECTOR, ".answer a.cite")
    assert "writing" in browser.find_element(By.ID, "ask-status").text
    screenshot(browser, "ask-streaming")
    # The end: the server-rendered answer with its citation linked.
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".answer a.cite"), seconds=60)
    assert written in browser.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert not browser.find_elements(By.CSS_SELECTOR, ".answer.streaming")
