"""The token budget of an MCP answer (``max_tokens``): how big an answer is, and fitting a list.

An answer is sent once as compact JSON (``compact_json``: the text block an agent reads, and
the same document as structured content). Its size in tokens is estimated as one token per
``CHARS_PER_TOKEN`` characters of that JSON -- on the safe side for code and JSON, which
tokenizers cut into pieces of three to four characters -- so an answer within the budget by
this estimate is within it for the model too.

``fit`` renders a list of results at the most generous detail level at which all of them fit
(long snippets, then shorter ones, then locations only) and, when even the barest form does not
fit, keeps the results that do -- at least one -- and says how many. The caller turns what was
left out into ``truncated: true`` and a cursor that continues after the last result kept.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

DEFAULT_MAX_TOKENS = 6000
MIN_MAX_TOKENS = 500  # room for the answer's frame and at least one result
MAX_MAX_TOKENS = 50_000
CHARS_PER_TOKEN = 3
RESERVE_TOKENS = 60  # for what the caller adds after fitting (truncated_by, tokens)

T = TypeVar("T")


def compact_json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=str)


def estimate_tokens(document: Any) -> int:
    return math.ceil(len(compact_json(document)) / CHARS_PER_TOKEN)


def fit(
    base: dict[str, Any],
    items: Sequence[T],
    render: Callable[[T, int], dict[str, Any]],
    levels: Sequence[int],
    max_tokens: int,
) -> tuple[list[dict[str, Any]], int | None]:
    """``items`` rendered at the first of ``levels`` at which ``base`` plus all of them fit in
    ``max_tokens``, and None; else at the last level, the first ones that fit (at least one),
    and the level they were cut at (the caller says so)."""
    base_tokens = estimate_tokens(base) + RESERVE_TOKENS
    rendered: list[dict[str, Any]] = []
    for level in levels:
        rendered = [render(item, level) for item in items]
        # +1 a result: the comma between list entries
        if base_tokens + sum(estimate_tokens(r) + 1 for r in rendered) <= max_tokens:
            return rendered, None
    kept: list[dict[str, Any]] = []
    used = base_tokens
    for entry in rendered:
        cost = estimate_tokens(entry) + 1
        if kept and used + cost > max_tokens:
            break
        kept.append(entry)
        used += cost
    return kept, levels[-1] if levels else 0


def largest_that_fits(build: Callable[[int], dict[str, Any]], count: int, max_tokens: int) -> Any:
    """``build(n)`` for the largest ``n <= count`` whose answer fits in ``max_tokens`` (down to
    0: a budget too small for one result still gets an answer that says so)."""
    answer = build(count)
    while count > 0 and estimate_tokens(answer) > max_tokens:
        count -= 1
        answer = build(count)
    return answer


def trim_lines(text: str, most: int, more_hint: str) -> str:
    """``text`` cut to ``most`` lines (0: empty), saying how many were left out and how to
    read them."""
    lines = text.splitlines()
    if len(lines) <= most:
        return text
    kept = "\n".join(lines[:most])
    note = f"... {len(lines) - most} more lines: {more_hint}"
    return f"{kept}\n{note}" if kept else note
