"""Line-window chunking for files without a grammar (or whose parse failed).

Windows are ``budget.window_lines`` long and overlap by ``budget.window_overlap`` lines,
so a passage cut by one window's edge is whole in the next.  A window is also kept under
``budget.max_chars`` (long-line files such as JSON data), shrinking it and its overlap in
proportion.  Blank lines at a window's edges are trimmed and blank-only windows dropped.
"""

from __future__ import annotations

from indexing.chunking.model import (
    DEFAULT_BUDGET,
    KIND_WINDOW,
    ChunkBudget,
    ChunkPiece,
    SourceLines,
)


def window_ranges(
    lines: SourceLines, budget: ChunkBudget = DEFAULT_BUDGET
) -> list[tuple[int, int]]:
    """0-based inclusive row ranges of the windows of a file."""
    total = len(lines)
    size = max(1, budget.window_lines)
    overlap = min(max(0, budget.window_overlap), size - 1)
    ranges: list[tuple[int, int]] = []
    start = 0
    while start < total:
        end = min(start + size - 1, total - 1)
        while end > start and lines.chars(start, end) > budget.max_chars:
            end = start + (end - start) // 2
        ranges.append((start, end))
        if end >= total - 1:
            break
        this_overlap = overlap * (end - start + 1) // size
        start = max(end + 1 - this_overlap, start + 1)
    return ranges


def chunk_windows(lines: SourceLines, budget: ChunkBudget = DEFAULT_BUDGET) -> list[ChunkPiece]:
    """Overlapping line windows, kind ``"window"``, no symbol and no calls."""
    pieces: list[ChunkPiece] = []
    seen: set[tuple[int, int]] = set()
    for start, end in window_ranges(lines, budget):
        trimmed = lines.trim(start, end)
        if trimmed is None or trimmed in seen:
            continue
        seen.add(trimmed)
        first, last = trimmed
        pieces.append(
            ChunkPiece(
                index=len(pieces),
                start_line=first + 1,
                end_line=last + 1,
                symbol=None,
                kind=KIND_WINDOW,
                content=lines.content(first, last),
            )
        )
    return pieces
