"""What a chunk is, the chunk size budget, and the line model every chunker shares.

Lines are counted the way git, editors and tree-sitter count them: a line ends at ``\\n``
(a ``\\r`` before it stays part of the line, so CRLF files keep their exact bytes), and a
final newline does not start an extra line.  A chunk's ``content`` is always exactly
``"\\n".join(lines[start_line - 1 : end_line])`` of the file — a verbatim slice, never
re-indented or normalised — which is what lets search results cite ``path:start-end``.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

KIND_FUNCTION = "function"
KIND_METHOD = "method"
KIND_CLASS = "class"  # classes, structs, interfaces, traits, enums, impl blocks
KIND_MODULE = "module"  # code between definitions
KIND_WINDOW = "window"  # line windows for files without a grammar


@dataclass(frozen=True)
class ChunkPiece:
    """One chunk of a file. Lines are 1-based and inclusive."""

    index: int
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    content: str
    calls: tuple[str, ...] = ()
    is_test: bool = False  # a test inside a source file (Rust `#[cfg(test)]`, `#[test]`)


@dataclass(frozen=True)
class ChunkBudget:
    """Size limits. A definition over either limit is split at statement boundaries."""

    max_lines: int = 150
    max_chars: int = 6000
    window_lines: int = 100
    window_overlap: int = 20


DEFAULT_BUDGET = ChunkBudget()


class SourceLines:
    """A file's lines with O(1) character counts for any line range (0-based rows)."""

    def __init__(self, text: str) -> None:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the final newline ends the last line, it starts no new one
        self.lines = lines
        # _offsets[i] = characters in rows 0..i-1, counting one newline per row.
        self._offsets = [0, *itertools.accumulate(len(line) + 1 for line in lines)]

    def __len__(self) -> int:
        return len(self.lines)

    def chars(self, first: int, last: int) -> int:
        return self._offsets[last + 1] - self._offsets[first]

    def content(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first : last + 1])

    def is_blank(self, row: int) -> bool:
        return not self.lines[row].strip()

    def trim(self, first: int, last: int) -> tuple[int, int] | None:
        """Shrink a row range to drop blank rows at both ends; None if all blank."""
        while first <= last and self.is_blank(first):
            first += 1
        while last >= first and self.is_blank(last):
            last -= 1
        return (first, last) if first <= last else None

    def fits(self, first: int, last: int, budget: ChunkBudget) -> bool:
        return last - first + 1 <= budget.max_lines and self.chars(first, last) <= budget.max_chars


def split_rows(
    lines: SourceLines,
    first: int,
    last: int,
    boundaries: Mapping[int, int],
    budget: ChunkBudget,
) -> list[tuple[int, int]]:
    """Split rows ``first..last`` into ranges that fit the budget.

    ``boundaries`` maps a row where a statement starts to its nesting depth (1 = a direct
    child of the thing being split).  A cut is made before a boundary row: among the cuts
    that keep the piece within budget and at least half full, the shallowest wins (so
    whole statements stay together), then the latest; with no such cut the latest fitting
    cut is taken, and with no boundary at all the rows are cut at the budget.  A single
    line longer than the character budget becomes a piece of its own.
    """
    pieces: list[tuple[int, int]] = []
    rows = sorted(r for r in boundaries if first < r <= last)
    cursor = first
    while not lines.fits(cursor, last, budget):
        start = bisect.bisect_right(rows, cursor)
        fitting: list[int] = []
        for r in rows[start:]:  # fitting is monotonic: stop at the first row too far
            if not lines.fits(cursor, r - 1, budget):
                break
            fitting.append(r)
        half_lines = budget.max_lines // 2
        half_chars = budget.max_chars // 2
        full_enough = [
            r
            for r in fitting
            if r - cursor >= half_lines or lines.chars(cursor, r - 1) >= half_chars
        ]
        if full_enough:
            cut = min(full_enough, key=lambda r: (boundaries[r], -r))
        elif fitting:
            cut = fitting[-1]
        else:
            cut = cursor + 1
            while cut <= last and lines.fits(cursor, cut, budget):
                cut += 1
        pieces.append((cursor, cut - 1))
        cursor = cut
    pieces.append((cursor, last))
    return pieces
