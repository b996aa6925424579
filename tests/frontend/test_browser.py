"""The web UI in a real browser: headless Chromium against the live server and a real worker.

A repository served over HTTP by ``GitHttpServer`` is added from the Repositories page and
indexed by the session's Celery worker; the browser watches the list update, searches, follows
the pipeline and a result into the file view, and re-opens a shared link. Each page is saved
under ``docs/screenshots/`` for the README.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from indexing.models import IndexJob, JobState, Repository
from indexing.services import jobs
from tests.frontend.browser import NARROW, WIDE, screenshot, text_of, wait_until
from tests.frontend.signed_in import api_client, sign_in_browser
from tests.indexing.demo_repository import PARSER, UTIL_JS
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


FILES = {
    "src/app/parser.py": PARSER,
    "src/app/util.js": UTIL_JS,
    "README.md": "# Demo\n\nA demo repository for reposearch.\n",
    "tests/test_parser.py": "from app.parser import parse_http_header\n\n\ndef test_parse():\n"
    "    assert parse_http_header('A: b') == ('a', 'b')\n",
}


@pytest.fixture
def served(tmp_path: Path, settings: Any) -> Iterator[GitHttpServer]:
    """The demo repository over HTTP on 127.0.0.1, which the web process is told to allow."""
    settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS = True
    repo = init_bare_repo(str(tmp_path / "demo.git"))
    commit_files(repo, FILES, message="first")
    with GitHttpServer({"team/demo.git": repo}) as server:
        yield server


def wait_for_ready(repository_id: str, seconds: float = 120) -> Repository:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        repository = Repository.objects.get(pk=repository_id)
        job = repository.jobs.order_by("-created_at").first()
        if job is not None and job.is_finished:
            assert job.state == "done", (job.state, job.error, job.failures)
            return repository
        time.sleep(0.3)
    raise AssertionError(f"repository {repository_id} was not indexed in {seconds} s")


def test_add_a_repository_and_watch_it_become_ready(
    live_server: Any, celery_worker_process: Any, browser: WebDriver, served: GitHttpServer
) -> None:
    sign_in_browser(browser, live_server.url)
    browser.get(f"{live_server.url}/repos/")
    wait_until(browser, lambda d: d.find_element(By.ID, "repo-empty").is_displayed())
    browser.find_element(By.ID, "repo-url").send_keys(served.url("team/demo.git"))
    browser.find_element(By.ID, "repo-branch").send_keys("main")
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()

    row = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#repo-rows tr"))[0]
    assert "demo" in row.text
    # The list follows the job through its stages without a reload, until the row is ready.
    browser.execute_script("window.notReloaded = true")
    # The repository is "ready" (searchable by full text) before its vectors are done.
    wait_until(browser, lambda d: "done" in text_of(d, "#repo-rows td.job"), seconds=120)
    assert browser.execute_script("return window.notReloaded") is True
    repository = Repository.objects.get()

    def row_shows_the_indexed_repository(driver: WebDriver) -> bool:
        # Read in one poll: the page may re-render the row between two reads.
        row = driver.find_element(By.CSS_SELECTOR, "#repo-rows tr")
        files = row.find_element(By.CSS_SELECTOR, "td[data-label=Files]").text
        return (
            row.get_attribute("data-status") == "ready"
            and repository.last_indexed_commit[:7] in row.text
            and f"{repository.file_count}" in files
            and "done" in row.find_element(By.CSS_SELECTOR, "td.job").text
        )

    wait_until(browser, row_shows_the_indexed_repository)
    screenshot(browser, "repositories")

    # The file view: whole file, highlighted, line anchors, the hit's lines marked.
    browser.get(
        f"{live_server.url}/repos/{repository.pk}/file?path=src/app/parser.py&start=4&end=7#L4"
    )
    # (the old address redirects to the permalink, the lines in its fragment, marked by file.js)
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hit"))
    hits = browser.find_elements(By.CSS_SELECTOR, "tr.hit")
    assert [hit.get_attribute("id") for hit in hits] == ["L4", "L5", "L6", "L7"]
    assert "/-/blob/" in browser.current_url and browser.current_url.endswith("#L4-L7")
    assert browser.find_elements(By.CSS_SELECTOR, ".code .nf")  # Pygments' function names
    screenshot(browser, "file-view")

    # With something indexed, the search page's empty state invites a first query.
    browser.get(f"{live_server.url}/")
    assert "Search your code" in browser.find_element(By.ID, "results").text
    assert browser.switch_to.active_element.get_attribute("id") == "q"
    screenshot(browser, "search-empty")


def add_and_index(served: GitHttpServer) -> Repository:
    response = api_client().post("/api/repos", {"url": served.url("team/demo.git")}, format="json")
    assert response.status_code == 202, response.json()
    return wait_for_ready(response.json()["id"])


def search_flow(browser: WebDriver, base_url: str, shots: str) -> None:
    """Search, read the pipeline, walk to a result's file view, come back, open a shared link."""
    browser.get(f"{base_url}/")
    browser.execute_script("document.activeElement.blur()")
    ActionChains(browser).send_keys("/").perform()  # "/" focuses the search box
    box = browser.switch_to.active_element
    assert box.get_attribute("id") == "q"
    box.send_keys("parse http header", Keys.ENTER)

    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    assert "q=parse+http+header" in browser.current_url
    first = browser.find_element(By.CSS_SELECTOR, "#results .result")
    assert "src/app/parser.py:" in first.text
    assert first.find_elements(By.CSS_SELECTOR, "mark")  # the query's words are marked
    assert first.find_elements(By.CSS_SELECTOR, ".scores dd")
    # The pipeline is one line above the results; opening it draws every stage.
    browser.execute_script("localStorage.removeItem('reposearch.pipeline')")
    line = browser.find_element(By.CSS_SELECTOR, ".pipeline summary")
    assert "full-text" in line.text
    screenshot(browser, shots)
    if browser.find_element(By.CSS_SELECTOR, ".pipeline").get_attribute("open") is None:
        line.click()
    stages = browser.find_elements(By.CSS_SELECTOR, ".pipeline .stage")
    assert len(stages) >= 3
    statuses = {stage.get_attribute("data-status") for stage in stages}
    assert "ran" in statuses and statuses <= {"ran", "skipped", "failed"}
    for stage in stages:
        assert re.search(
            r"(ran|skipped|failed)", stage.find_element(By.CSS_SELECTOR, ".stage-status").text
        )
        if stage.get_attribute("data-status") == "skipped":
            assert stage.find_element(By.CSS_SELECTOR, ".stage-reason").text  # says why
    line.click()  # closed again: the pages below show the one line

    # Arrow keys move through results; Enter opens the file view at the hit.
    browser.find_element(By.ID, "q").send_keys(Keys.ARROW_DOWN)
    assert browser.switch_to.active_element.get_attribute("data-position") == "1"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_until(browser, lambda d: "/-/blob/" in d.current_url)
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.hit"))
    assert "parser.py" in browser.find_element(By.CSS_SELECTOR, ".file-path").text

    # Back returns to the same search.
    browser.back()
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    assert browser.find_element(By.ID, "q").get_attribute("value") == "parse http header"

    # A shared link holds the query and the filters.
    browser.get(f"{base_url}/?q=retryWithBackoff&lang=javascript&rerank=1")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
    assert "src/app/util.js" in text_of(browser, "#results .result-title")
    assert "src/app/parser.py" not in text_of(browser, "#results .result-title")
    assert browser.find_element(By.CSS_SELECTOR, "input[name=lang][value=javascript]").is_selected()
    # No chat model answers in this test: the link's rerank waits, disabled, saying why.
    rerank = browser.find_element(By.CSS_SELECTOR, "input[name=rerank]")
    assert rerank.get_attribute("disabled") is not None and not rerank.is_selected()
    assert "Rerank and query expansion are off" in browser.find_element(By.ID, "llm-hint").text
    browser.set_window_size(*NARROW)
    screenshot(browser, f"{shots}-narrow", NARROW)
    browser.set_window_size(*WIDE)

    # Full-text only: a vector search always has nearest neighbours.
    browser.get(f"{base_url}/?q=zzzqqqxxy&vector=0")
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".no-results"))
    assert "No results for" in browser.find_element(By.CSS_SELECTOR, ".no-results").text


def test_search_with_the_real_search_api(
    live_server: Any, celery_worker_process: Any, browser: WebDriver, served: GitHttpServer
) -> None:
    sign_in_browser(browser, live_server.url)
    add_and_index(served)
    search_flow(browser, live_server.url, "search")


def test_a_running_job_shows_stage_counters_progress_and_time_left(
    live_server: Any, browser: WebDriver
) -> None:
    sign_in_browser(browser, live_server.url)
    repository = Repository.objects.create(
        url="https://github.com/acme/big.git", name="acme/big", status="indexing"
    )
    job = IndexJob.objects.create(repository=repository, files_total=40, files_done=40)
    for state in (JobState.CLONING, JobState.WALKING, JobState.CHUNKING, JobState.STORING):
        job = jobs.transition(job, state)
    job = jobs.transition(job, JobState.EMBEDDING, chunks_total=200, chunks_embedded=20)
    thirty_seconds_ago = timezone.now() - timedelta(seconds=30)
    IndexJob.objects.filter(pk=job.pk).update(
        started_at=thirty_seconds_ago, stage_started_at=thirty_seconds_ago
    )
    # A second repository is stored and waits for the embed queue behind the first.
    behind = Repository.objects.create(
        url="https://github.com/acme/small.git", name="acme/small", status="ready"
    )
    waiting = IndexJob.objects.create(repository=behind, files_total=3, files_done=3)
    for state in (JobState.CLONING, JobState.WALKING, JobState.CHUNKING, JobState.STORING):
        waiting = jobs.transition(waiting, state)
    IndexJob.objects.filter(pk=waiting.pk).update(chunks_total=9, stage_timings={"storing": 0.1})
    browser.get(f"{live_server.url}/repos/")
    bar = wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#repo-rows progress"))[0]
    first_value = int(bar.get_attribute("value"))
    job_text = browser.find_element(By.CSS_SELECTOR, f"tr[data-id='{repository.pk}'] td.job").text
    assert "embedding" in job_text and "20/200 embedded" in job_text
    # 180 chunks at the stage's own pace blended with the default rate: about 15 s.
    eta = api_client().get(f"/api/repos/{repository.pk}").json()["current_job"]["eta_seconds"]
    assert 5 < eta < 60
    assert re.search(r"about \d+ s left", job_text), job_text
    behind_text = browser.find_element(By.CSS_SELECTOR, f"tr[data-id='{behind.pk}'] td.job").text
    assert "waiting" in behind_text
    assert "1 job ahead in the embed queue (1 embedding now)" in behind_text

    browser.execute_script("window.notReloaded = true")
    IndexJob.objects.filter(pk=job.pk).update(chunks_embedded=150)
    wait_until(
        browser,
        lambda d: (
            int(d.find_element(By.CSS_SELECTOR, "#repo-rows progress").get_attribute("value"))
            > first_value
        ),
    )
    assert "150/200 embedded" in browser.find_element(By.CSS_SELECTOR, "td.job").text
    assert browser.execute_script("return window.notReloaded") is True
    screenshot(browser, "repositories-progress")
    browser.set_window_size(*NARROW)
    screenshot(browser, "repositories-narrow", NARROW)
    browser.set_window_size(*WIDE)

    # Re-index is harmless: it asks nothing (here the running job takes the request over).
    browser.find_element(
        By.CSS_SELECTOR, f"button[data-action=reindex][data-id='{behind.pk}']"
    ).click()
    wait_until(
        browser, lambda d: "already being indexed" in d.find_element(By.ID, "repo-status").text
    )
    assert not browser.find_element(By.ID, "confirm").is_displayed()

    # Delete asks first; cancelling keeps the repository.
    browser.find_element(By.CSS_SELECTOR, "button[data-action=delete]").click()
    dialog = wait_until(browser, lambda d: d.find_element(By.ID, "confirm"))
    assert "acme/big" in dialog.text
    dialog.find_element(By.CSS_SELECTOR, "button[value=cancel]").click()
    assert Repository.objects.filter(pk=repository.pk).exists()
    browser.find_element(By.CSS_SELECTOR, "button[data-action=delete]").click()
    wait_until(browser, lambda d: d.find_element(By.ID, "confirm-ok").is_displayed())
    browser.find_element(By.ID, "confirm-ok").click()
    wait_until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#repo-rows tr")) == 1)
    assert not Repository.objects.filter(pk=repository.pk).exists()


def test_settings_show_the_model_configuration_and_save_changes(
    live_server: Any, browser: WebDriver
) -> None:
    sign_in_browser(browser, live_server.url)
    browser.get(f"{live_server.url}/settings/")
    form = wait_until(browser, lambda d: d.find_element(By.ID, "config-form").is_displayed())
    assert form
    base_url = browser.find_element(By.ID, "base_url")
    assert base_url.get_attribute("readonly") is not None and base_url.get_attribute("value")
    chat_model = browser.find_element(By.ID, "chat_model")
    chat_model.clear()
    chat_model.send_keys("qwen2.5-coder")
    browser.find_element(By.CSS_SELECTOR, "#config-form button[type=submit]").click()
    saved = wait_until(
        browser,
        lambda d: (
            d.find_element(By.ID, "config-saved")
            if d.find_element(By.ID, "config-saved").is_displayed()
            else None
        ),
    )
    assert "Saved" in saved.text
    browser.refresh()
    wait_until(browser, lambda d: d.find_element(By.ID, "config-form").is_displayed())
    assert browser.find_element(By.ID, "chat_model").get_attribute("value") == "qwen2.5-coder"

    dim = browser.find_element(By.ID, "embedding_dim")
    dim.clear()
    dim.send_keys("512")  # the bundled local model has 384
    browser.find_element(By.CSS_SELECTOR, "#config-form button[type=submit]").click()
    error = wait_until(
        browser,
        lambda d: (
            d.find_element(By.ID, "config-error")
            if d.find_element(By.ID, "config-error").is_displayed()
            else None
        ),
    )
    assert error.text.startswith("Not saved:") and "384 dimensions" in error.text
    assert dim.get_attribute("aria-invalid") == "true"
    browser.find_element(By.ID, "config-reset").click()
    health = wait_until(browser, lambda d: d.find_element(By.ID, "health").text)
    assert "embedding model\nall-MiniLM-L6-v2 · ready" in health
    assert "cross-encoder\nms-marco-MiniLM-L-12-v2 · ready" in health
    screenshot(browser, "settings")
