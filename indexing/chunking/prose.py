"""Section chunking for Markdown and reStructuredText: one chunk per heading's section.

A documentation page is cut at its headings (Markdown ``#`` lines, reStructuredText titles
underlined with ``===``, ``---``, ``~~~``...), and each section's heading is the chunk's
symbol, so the words of the heading are weighted like a definition's name in full-text search
and named in the embedded header, as a function's name is. Text before the first heading is a
section without a symbol. A section over the chunk budget is split at paragraph boundaries
(``split_rows``), each piece keeping the heading. Files without headings return ``None`` and
get line windows as before. Fenced code blocks (````` ``` `````, ``~~~``) are not searched
for headings: a ``# comment`` inside one is not a title.
"""

from __future__ import annotations

import re

from indexing.chunking.model import ChunkBudget, ChunkPiece, SourceLines, split_rows

KIND_SECTION = "section"
PROSE_LANGUAGES = frozenset({"markdown", "rst"})

_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
MAX_HEADING_CHARS = 200


def headings(lines: list[str], language: str) -> list[tuple[int, str]]:
    """(0-based row, title) of each heading, in order."""
    found: list[tuple[int, str]] = []
    fenced = False
    for row, line in enumerate(lines):
        if language == "markdown" and _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if language == "markdown":
            match = _MD_HEADING.match(line)
            if match:
                found.append((row, match.group(2).strip()[:MAX_HEADING_CHARS]))
                continue
        title = line.strip()
        if (
            row + 1 < len(lines)
            and title
            and not _RST_UNDERLINE.match(line)
            and not line[:1].isspace()
            and _RST_UNDERLINE.match(lines[row + 1].rstrip())
            and len(lines[row + 1].rstrip()) >= len(title)
        ):
            # An overline above the title belongs to the heading too.
            start = row - 1 if row > 0 and _RST_UNDERLINE.match(lines[row - 1].rstrip()) else row
            found.append((start, title[:MAX_HEADING_CHARS]))
    return found


def chunk_sections(
    lines: SourceLines, language: str, budget: ChunkBudget
) -> list[ChunkPiece] | None:
    """One or more chunks per section, in file order; ``None`` when there is no heading."""
    marks = headings(lines.lines, language)
    if not marks:
        return None
    starts: list[tuple[int, str | None]] = [(0, None)] if marks[0][0] > 0 else []
    starts += [(row, title) for row, title in marks]
    pieces: list[ChunkPiece] = []
    for i, (first, title) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
        trimmed = lines.trim(first, last) if first <= last else None
        if trimmed is None:
            continue
        first, last = trimmed
        paragraphs = {r: 1 for r in range(first + 1, last + 1) if lines.is_blank(r - 1)}
        for start, end in split_rows(lines, first, last, paragraphs, budget):
            span = lines.trim(start, end)
            if span is None:
                continue
            pieces.append(
                ChunkPiece(
                    index=len(pieces),
                    start_line=span[0] + 1,
                    end_line=span[1] + 1,
                    symbol=title,
                    kind=KIND_SECTION,
                    content=lines.content(span[0], span[1]),
                )
            )
    return pieces or None
