"""PostgreSQL's planner estimates the exact-search reader picks its read plan by (never its
answer): how many chunks a pattern's literals would match, and how many chunks there are."""

from __future__ import annotations

import json
import time
from typing import Any

_TABLE_ROWS: list[float] = [0.0, float("-inf")]  # (reltuples, when read)


def expected_chunks(cursor: Any, condition: str, params: list[str]) -> float:
    """The planner's estimate of the chunks (every repository and generation) matching."""
    cursor.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM indexing_chunk c WHERE {condition}",  # noqa: S608
        params,
    )
    plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def table_rows(cursor: Any) -> float:
    """The planner's count of chunks (kept a minute per process: one statement less)."""
    rows, read_at = _TABLE_ROWS
    if time.monotonic() - read_at > 60:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'indexing_chunk'::regclass")
        rows = float(cursor.fetchone()[0] or 0)
        _TABLE_ROWS[:] = [rows, time.monotonic()]
    return rows if rows > 0 else float("inf")  # never analysed: no estimate to trust
