"""Per-account budgets: over them a 429 with ``Retry-After``; other accounts are unaffected;
an unreachable cache lets requests through instead of failing them."""

from __future__ import annotations

import pytest

from tests.accounts_support import make_account, token_client
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db


def test_search_over_budget_is_429_with_retry_after(settings) -> None:  # type: ignore[no-untyped-def]
    indexed_repository("budget", ["def f():\n    return 1\n"])
    settings.REPO_SEARCH_THROTTLE_SEARCH = "3/min"
    busy = token_client("read")
    answers = [busy.post("/api/search", {"query": "f"}, format="json") for _ in range(4)]
    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert answers[3].status_code == 429
    assert int(answers[3]["Retry-After"]) > 0
    assert answers[3].json()["error"]["code"] == "throttled"
    assert (
        token_client("read").post("/api/search", {"query": "f"}, format="json").status_code == 200
    )
    # Reads of other kinds are not on the search budget.
    assert busy.get("/api/repos").status_code == 200


def test_writes_share_one_budget_per_account(settings) -> None:  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_THROTTLE_WRITES = "2/min"
    writer = token_client("write")
    codes = [writer.post("/api/repos/nope/reindex").status_code for _ in range(2)]
    codes.append(writer.delete("/api/repos/nope").status_code)
    assert codes == [404, 404, 429]
    # Search is a read, not a write.
    assert writer.post("/api/search", {"query": "f"}, format="json").status_code == 200


def test_an_unreachable_cache_lets_requests_through(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    settings.REPO_SEARCH_THROTTLE_SEARCH = "1/min"
    client = token_client("read", user=make_account("read"))
    codes = [
        client.post("/api/search", {"query": "f"}, format="json").status_code for _ in range(2)
    ]
    assert codes == [200, 200]
