"""A NUL character in any MCP tool's text argument is the caller's mistake, answered as a tool
error naming the argument, never an unhandled error from the database (issue 33, Low)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from indexing.models import Repository, RepositoryStatus
from search.mcp import navigation_tools, tools
from search.mcp.server import build_server
from search.mcp.tools import ToolInputError
from tests.mcp.test_mcp_transports import payload

NUL = "a\x00b"

CALLS = [
    ("search_code", {"query": NUL}, "query"),
    ("search_code", {"query": "x", "repo": NUL}, "repo"),
    ("search_code", {"query": "x", "mode": NUL}, "mode"),
    ("search_code", {"query": "x", "cursor": NUL}, "cursor"),
    ("search_code", {"query": "x", "branch": NUL}, "branch"),
    ("repository_status", {"repo": NUL}, "repo"),
    ("get_file", {"repo": NUL, "path": "README.md"}, "repo"),
    ("get_file", {"repo": "acme/demo", "path": NUL}, "path"),
    ("find_symbol", {"name": NUL}, "name"),
    ("find_symbol", {"name": "x", "repo": NUL}, "repo"),
    ("find_symbol", {"name": "x", "lang": NUL}, "lang"),
    ("find_symbol", {"name": "x", "kind": NUL}, "kind"),
    ("find_symbol", {"name": "x", "branch": NUL}, "branch"),
    ("find_references", {"name": NUL}, "name"),
    ("find_references", {"name": "x", "repo": NUL}, "repo"),
    ("list_files", {"repo": NUL}, "repo"),
    ("list_files", {"repo": "acme/demo", "path": NUL}, "path"),
    ("list_files", {"repo": "acme/demo", "glob": NUL}, "glob"),
    ("locate_issue", {"issue": NUL}, "issue"),
    ("locate_issue", {"issue": "x", "repo": NUL}, "repo"),
    ("refresh_repository", {"repo": NUL}, "repo"),
    ("refresh_repository", {"repo": "acme/demo", "branch": NUL}, "branch"),
]


@pytest.fixture
def demo(transactional_db: Any) -> Repository:
    return Repository.objects.create(
        url="https://example.org/acme/demo.git",
        name="acme/demo",
        branch="main",
        status=RepositoryStatus.READY,
        active_generation=1,
    )


def test_every_text_argument_with_a_nul_is_a_tool_error_naming_it(demo) -> None:
    async def call_all() -> list[Any]:
        async with Client(build_server()) as client:
            return [await client.call_tool(name, arguments) for name, arguments, _ in CALLS]

    results = anyio.run(call_all)
    for (name, _, argument), result in zip(CALLS, results, strict=True):
        assert result.is_error, (name, argument)
        error = payload(result)["error"]
        assert error["code"] == "invalid_argument", (name, argument, error)
        assert error["message"] == f"{argument} contains a NUL character"
        assert error["details"] == {"field": argument}


def test_the_tools_themselves_refuse_a_nul_in_repo_and_path(demo) -> None:
    for call in (
        lambda: tools.repository_status(NUL),
        lambda: tools.get_file("acme/demo", NUL),
        lambda: navigation_tools.list_files(NUL),
    ):
        with pytest.raises(ToolInputError) as caught:
            call()
        assert json.loads(str(caught.value))["error"]["code"] in ("unknown_repo", "invalid_path")
