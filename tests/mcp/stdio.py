"""``manage.py mcp --user NAME`` as an agent starts it: a subprocess speaking MCP over stdio, on
the test's database and data directory, with no chat model."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import _test_database_url

ROOT = Path(__file__).resolve().parents[2]


def stdio_parameters(username: str, settings: Any) -> StdioServerParameters:
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "DJANGO_SETTINGS_MODULE": "reposearch.settings.test",
        "REPO_SEARCH_DATA_DIR": str(settings.REPO_SEARCH_DATA_DIR),
        "LLM_PROVIDER": "none",
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--user", username],
        cwd=str(ROOT),
        env=env,
    )


@asynccontextmanager
async def stdio_session(username: str, settings: Any) -> AsyncIterator[ClientSession]:
    """An initialised MCP session with ``manage.py mcp --user username``."""
    params = stdio_parameters(username, settings)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session
