"""Fair search under load (issue 33 item 5): one reader's costly searches -- a regex with no
literal to narrow by -- take at most ``REPO_SEARCH_COSTLY_SEARCHES_PER_USER`` of the server at
once; the excess is a 429 with ``Retry-After`` at once, and everyone else's searches (and that
reader's cheap ones) are answered meanwhile.

Under a real uvicorn with real Redis. The reader's costly searches are made to last until the
test lets them finish (they wait at the entrance of the exact engine), so "running at the same
time" is a fact of the test rather than a matter of timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from accounts.roles import role_of
from accounts.visibility import viewer_for
from search import fair_use
from search import router as dispatch
from search.exact.engine import ExactRequest, ExactResult
from search.mcp.identity import Caller, acting_as
from search.mcp.tools import ToolInputError, search_code
from tests.accounts_support import bearer, make_account, token_for
from tests.asgi_server import serving_the_site
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db(transaction=True)

HELD_REGEX = r"/\w+_\d+\(/"  # the first reader's costly search: no literal to narrow by
PROBE = "pool_1("  # a line only HELD_REGEX matches among the searches here
OTHER_COSTLY = r"/[a-z]+[0-9]{2}\(/"
SOURCE = [
    "def connect_pool_1(size):\n    return size\n",
    "def ab12():\n    return connect_pool_1(2)\n",
]


class HeldSearches:
    """Costly searches for ``HELD_REGEX`` wait in the engine until ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self._real = dispatch.run_exact

    def run_exact(self, request: ExactRequest) -> ExactResult:
        if request.matchers[0].ranges(PROBE):
            self.entered.release()
            assert self.release.wait(60), "the test never let the held search finish"
        return self._real(request)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldSearches]:
    searches = HeldSearches()
    monkeypatch.setattr(dispatch, "run_exact", searches.run_exact)
    try:
        yield searches
    finally:
        searches.release.set()


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[str]:
    settings.REPO_SEARCH_COSTLY_SEARCHES_PER_USER = 2
    with serving_the_site(monkeypatch) as base:
        yield base


def _search(base: str, token: str, query: str) -> httpx.Response:
    return httpx.post(
        f"{base}/api/search", json={"query": query}, headers=bearer(token), timeout=60
    )


def _paths(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["file_path"] for hit in response.json()["results"]]


def _until_done(futures: list[Future[httpx.Response]], count: int) -> None:
    deadline = time.monotonic() + 60
    while sum(f.done() for f in futures) < count:
        assert time.monotonic() < deadline, "the refused searches were never answered"
        time.sleep(0.05)


def test_one_readers_costly_searches_do_not_hold_up_anyone_elses(
    site: str, held: HeldSearches
) -> None:
    indexed_repository("fair/corpus", SOURCE)
    first, second = token_for(make_account("read")), token_for(make_account("read"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        costly = [pool.submit(_search, site, first, HELD_REGEX) for _ in range(8)]
        for _ in range(2):  # two of them run (and stay running until released)
            assert held.entered.acquire(timeout=60), "no costly search started"
        _until_done(costly, 6)
        refused = [f.result() for f in costly if f.done()]
        running = [f for f in costly if not f.done()]
        assert [r.status_code for r in refused] == [429] * 6
        for response in refused:
            assert response.headers["Retry-After"] == "2"
            error = response.json()["error"]
            assert error["code"] == "too_many_costly_searches"
            assert error["details"] == {"running": 2, "retry_after": 2}
            assert "regex with no literal text" in error["message"]

        # Meanwhile: another reader's cheap and costly searches, and the first's cheap one.
        assert _paths(_search(site, second, '"connect_pool_1"')) == ["src/app.py"]
        assert _paths(_search(site, second, OTHER_COSTLY)) == ["src/app.py"]
        assert _paths(_search(site, first, '"connect_pool_1"')) == ["src/app.py"]
        assert [f.done() for f in running] == [False, False]  # the two are still running

        held.release.set()
        assert [_paths(f.result(timeout=60)) for f in running] == [["src/app.py"]] * 2
    # Their slots are free again: the same reader's next costly search runs.
    assert _paths(_search(site, first, HELD_REGEX)) == ["src/app.py"]


def test_an_agent_over_its_share_gets_a_tool_error_and_its_cheap_searches_run(
    settings: Any,
) -> None:
    settings.REPO_SEARCH_COSTLY_SEARCHES_PER_USER = 1
    indexed_repository("fair/mcp", SOURCE)
    user = make_account("read")
    viewer = viewer_for(user)
    # The agent's one slot is taken (by its search in another session, say).
    slot = fair_use._slots(fair_use.caller_of(user, None))[0]
    assert slot.acquire(blocking=False)
    with acting_as(viewer, Caller(role=role_of(user), user=user)):
        try:
            with pytest.raises(ToolInputError) as refused:
                search_code(HELD_REGEX, viewer=viewer)
            cheap = search_code('"connect_pool_1"', viewer=viewer)
        finally:
            slot.release()
        costly = search_code(HELD_REGEX, viewer=viewer)
    assert refused.value.payload["error"]["code"] == "too_many_costly_searches"
    assert "src/app.py" in str(cheap)
    assert "connect_pool_1(" in str(costly)
