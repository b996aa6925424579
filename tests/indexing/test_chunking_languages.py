"""Per-language structure of chunks: symbols, kinds, exact line ranges and calls.

Each source below is real-looking code; the expected outline lists, for every chunk,
(start_line, end_line, kind, symbol, calls).  Line numbers are 1-based and inclusive.
"""

from __future__ import annotations

import pytest

from indexing.chunking import ChunkPiece, chunk_file
from tests.indexing.chunking_samples_compiled import (
    C_EXPECTED,
    C_SOURCE,
    CPP_EXPECTED,
    CPP_SOURCE,
    CSHARP_EXPECTED,
    CSHARP_SOURCE,
    GO_EXPECTED,
    GO_SOURCE,
    JAVA_EXPECTED,
    JAVA_SOURCE,
    RUST_EXPECTED,
    RUST_SOURCE,
)
from tests.indexing.chunking_samples_scripting import (
    JAVASCRIPT_EXPECTED,
    JAVASCRIPT_SOURCE,
    PHP_EXPECTED,
    PHP_SOURCE,
    PYTHON_EXPECTED,
    PYTHON_SOURCE,
    RUBY_EXPECTED,
    RUBY_SOURCE,
    TYPESCRIPT_EXPECTED,
    TYPESCRIPT_SOURCE,
)


def outline(pieces: list[ChunkPiece]) -> list[tuple[int, int, str, str | None, tuple[str, ...]]]:
    return [(p.start_line, p.end_line, p.kind, p.symbol, p.calls) for p in pieces]


def lines_of(text: str, piece: ChunkPiece) -> str:
    return "\n".join(text.split("\n")[piece.start_line - 1 : piece.end_line])


@pytest.mark.parametrize(
    ("language", "path", "source", "expected"),
    [
        ("python", "pkg/a.py", PYTHON_SOURCE, PYTHON_EXPECTED),
        ("javascript", "src/store.js", JAVASCRIPT_SOURCE, JAVASCRIPT_EXPECTED),
        ("typescript", "src/shapes.ts", TYPESCRIPT_SOURCE, TYPESCRIPT_EXPECTED),
        ("go", "cmd/server.go", GO_SOURCE, GO_EXPECTED),
        ("rust", "src/point.rs", RUST_SOURCE, RUST_EXPECTED),
        ("java", "src/main/java/p/A.java", JAVA_SOURCE, JAVA_EXPECTED),
        ("c", "src/find.c", C_SOURCE, C_EXPECTED),
        ("cpp", "src/shape.cpp", CPP_SOURCE, CPP_EXPECTED),
        ("csharp", "App/Service.cs", CSHARP_SOURCE, CSHARP_EXPECTED),
        ("ruby", "lib/billing.rb", RUBY_SOURCE, RUBY_EXPECTED),
        ("php", "app/Models/User.php", PHP_SOURCE, PHP_EXPECTED),
    ],
)
def test_outline_per_language(
    language: str, path: str, source: str, expected: list[tuple[object, ...]]
) -> None:
    pieces = chunk_file(source, language, path)
    assert outline(pieces) == expected
    for piece in pieces:
        assert piece.content == lines_of(source, piece)
