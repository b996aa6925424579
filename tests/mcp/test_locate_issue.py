"""The MCP tool ``locate_issue`` over a small repository indexed by the real store: compact
ranked files with their functions and reasons, within the token budget, and its refusals."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from search.mcp.locate_tool import locate_issue
from search.mcp.server import build_server
from search.mcp.tools import ToolInputError
from tests.accounts.visibility_corpus import leaks
from tests.mcp.test_mcp_transports import payload
from tests.search.test_localize import SHOP, TRACEBACK_ISSUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(settings: Any, tmp_path: Any) -> Any:
    from tests.factories import indexed_repository

    settings.REPO_SEARCH_DATA_DIR = tmp_path
    return indexed_repository("acme/shop", SHOP, clone=True, embed=True)


def test_locate_issue_names_the_file_and_function_with_why(shop: Any) -> None:
    answer = locate_issue(TRACEBACK_ISSUE, repo="acme/shop")
    first = answer["files"][0]
    assert (first["rank"], first["repository"], first["path"]) == (
        1,
        "acme/shop",
        "src/shop/pool.py",
    )
    assert "stack frame at line 8 in `acquire`" in first["why"]
    assert first["functions"][0]["symbol"] == "Pool.acquire"
    assert first["functions"][0]["lines"] == "5-9"
    assert answer["commits"] == {"acme/shop": shop.last_indexed_commit}
    assert answer["read_from_issue"]["frames"][0].startswith("shop/pool.py:8")
    assert answer["truncated"] is False and answer["tokens"] <= 6000


def test_a_small_budget_drops_reasons_then_files_and_says_so(shop: Any) -> None:
    issue = TRACEBACK_ISSUE + "\n`retry_with_backoff` and `load_settings_from_environment` too."
    full = locate_issue(issue)
    small = locate_issue(issue, max_tokens=500)
    assert small["tokens"] <= 500 < full["tokens"]
    assert small["files"][0]["path"] == full["files"][0]["path"]
    assert "why" not in small["files"][0]
    if len(small["files"]) < len(full["files"]):
        assert small["truncated"] is True and "max_tokens=500" in small["truncated_by"]


def test_locate_issue_refuses_what_it_cannot_use(shop: Any) -> None:
    for kwargs, code in (
        ({"issue": "  "}, "invalid_issue"),
        ({"issue": "x" * 20_001}, "issue_too_long"),
        ({"issue": "pool", "limit": 0}, "invalid_limit"),
        ({"issue": "pool", "repo": "acme/nope"}, "unknown_repo"),
    ):
        with pytest.raises(ToolInputError) as caught:
            locate_issue(**kwargs)
        error = json.loads(str(caught.value))["error"]
        assert error["code"] == code and error["valid"]


def test_locate_issue_over_the_protocol_keeps_to_what_the_caller_may_see(
    transactional_db: Any, corpus: Any
) -> None:
    issue = "`zanzibar_quokka_token` returns the wrong token for the connection pool"

    async def call() -> Any:
        async with Client(build_server()) as client:
            return await client.call_tool("locate_issue", {"issue": issue})

    answer = payload(anyio.run(call))
    assert answer["files"][0]["path"] == "src/pool.py"
    assert leaks(answer, corpus.vault) == []
