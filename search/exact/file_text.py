"""A file's lines as one text, so a pattern is searched once per file rather than once per line.

Calling a matcher on every line costs a Python call (and for RE2 an encoding) per line: for the
candidate files of a regex that most do not match, that was most of a search's time. A file is
searched whole instead (``"\\n"`` between its lines) and only the lines the whole-text matches
touch are matched line by line (``LineMatcher.ranges``), which stays the one source of the
answer; a line no whole-text match touches has no match of its own (``search.exact.patterns``
says why for each kind of pattern).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import cached_property
from itertools import accumulate

# The first match at or after a position: its (start, end), or None.
SpanSearch = Callable[[int], tuple[int, int] | None]


class FileText:
    """``lines`` (in line order, without their newlines) joined by ``"\\n"``."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.text = "\n".join(lines)

    @cached_property
    def char_starts(self) -> list[int]:
        """Where each line starts in ``text`` (character offsets)."""
        return [0, *accumulate(len(line) + 1 for line in self.lines[:-1])]

    @cached_property
    def data(self) -> bytes:
        return self.text.encode()

    @cached_property
    def byte_starts(self) -> list[int]:
        """Where each line starts in ``data`` (byte offsets)."""
        if len(self.data) == len(self.text):  # ASCII: the same offsets
            return self.char_starts
        sizes = (len(line.encode()) + 1 for line in self.lines[:-1])
        return [0, *accumulate(sizes)]

    def touched(self, spans: SpanSearch, starts: list[int]) -> list[int]:
        """The indexes of the lines that matches found by ``spans(pos)`` (the first match at or
        after ``pos``, or None) start in or cross, ``starts`` being the lines' offsets in the
        searched text. After a match the search goes on from the next line's start: the line
        is marked already, whatever else it holds."""
        marked: list[int] = []
        pos = 0
        while self.lines and (found := spans(pos)) is not None:
            start, end = found
            first = bisect_right(starts, start) - 1
            last = bisect_right(starts, max(start, end - 1)) - 1
            marked.extend(range(max(first, marked[-1] + 1 if marked else 0), last + 1))
            if last + 1 >= len(starts):
                break
            pos = starts[last + 1]
        return marked
