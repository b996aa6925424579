"""Cutting a file into search chunks: ``chunk_file(text, language, path)``.

Files in a language with a tree-sitter grammar (Python, JavaScript, TypeScript, TSX, Go,
Rust, Java, C, C++, C#, Ruby, PHP) are chunked by structure (``treesitter.py``); all other
files, and any file whose parse fails, get overlapping line windows (``windows.py``). With
``prose_sections`` (the indexer's default, ``REPO_SEARCH_DOC_SECTIONS``), Markdown and reStructuredText pages with headings get one chunk
per section with the heading as its symbol instead (``prose.py``).

Guarantees, whatever the input: every chunk's ``content`` is exactly the file's lines
``start_line..end_line`` (1-based, inclusive, joined with ``\\n``, CRLF kept); chunks are
in file order; every non-blank line is in at least one chunk (in exactly one for
structured chunks; windows overlap by design); no chunk is blank.
"""

from __future__ import annotations

import logging

from indexing.chunking.grammars import available_grammars, get_parser, grammar_for
from indexing.chunking.model import (
    DEFAULT_BUDGET,
    KIND_CLASS,
    KIND_FUNCTION,
    KIND_METHOD,
    KIND_MODULE,
    KIND_WINDOW,
    ChunkBudget,
    ChunkPiece,
    SourceLines,
)
from indexing.chunking.prose import KIND_SECTION, PROSE_LANGUAGES, chunk_sections
from indexing.chunking.treesitter import TreeChunker
from indexing.chunking.windows import chunk_windows
from indexing.languages import is_test_path

__all__ = [
    "DEFAULT_BUDGET",
    "KIND_CLASS",
    "KIND_FUNCTION",
    "KIND_METHOD",
    "KIND_MODULE",
    "KIND_SECTION",
    "KIND_WINDOW",
    "ChunkBudget",
    "ChunkPiece",
    "available_grammars",
    "chunk_file",
    "grammar_for",
]

logger = logging.getLogger(__name__)


def chunk_file(
    text: str,
    language: str | None,
    path: str,
    *,
    budget: ChunkBudget = DEFAULT_BUDGET,
    prose_sections: bool = False,
) -> list[ChunkPiece]:
    """Chunk one file's text; ``language`` is an id from ``indexing.languages``.

    ``prose_sections`` cuts Markdown and reStructuredText pages at their headings
    (``REPO_SEARCH_DOC_SECTIONS``, on by default with learned fusion: docs/evaluation.md,
    "Fourth round").
    """
    lines = SourceLines(text)
    if not lines.lines:
        return []
    grammar = grammar_for(language, path)
    parser = get_parser(grammar) if grammar is not None else None
    if grammar is not None and parser is not None:
        try:
            tree = parser.parse(text.encode("utf-8", "replace"))
            chunker = TreeChunker(
                lines, tree.root_node, grammar, budget, test_blocks=is_test_path(path)
            )
            return chunker.chunk()
        except (RecursionError, ValueError, RuntimeError, MemoryError) as exc:
            # A pathological file must not fail the whole repository: window it.
            logger.warning(
                "structured chunking failed, using line windows",
                extra={"path": path, "language": language, "error": repr(exc)},
            )
    if prose_sections and language in PROSE_LANGUAGES:
        sections = chunk_sections(lines, language, budget)
        if sections is not None:
            return sections
    return chunk_windows(lines, budget)
