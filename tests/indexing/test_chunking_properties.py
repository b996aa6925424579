"""Invariants of chunk_file that every consumer relies on, checked on generated code.

Whatever the input: each chunk's content is exactly the file's lines start..end, chunks
are ordered, structured chunks never overlap, no chunk is blank, and every non-blank
line of the file is in some chunk.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexing.chunking import ChunkBudget, ChunkPiece, chunk_file

SMALL_BUDGET = ChunkBudget(max_lines=12, max_chars=400, window_lines=10, window_overlap=3)


def file_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def check_invariants(text: str, pieces: list[ChunkPiece], *, overlapping: bool = False) -> None:
    lines = file_lines(text)
    covered: set[int] = set()
    previous_end = 0
    for position, piece in enumerate(pieces):
        assert piece.index == position
        assert 1 <= piece.start_line <= piece.end_line <= len(lines)
        assert piece.content == "\n".join(lines[piece.start_line - 1 : piece.end_line])
        assert piece.content.strip(), "a chunk must not be blank"
        assert lines[piece.start_line - 1].strip() != ""
        assert lines[piece.end_line - 1].strip() != ""
        if overlapping:
            assert piece.start_line > (pieces[position - 1].start_line if position else 0)
        else:
            assert piece.start_line > previous_end, "structured chunks must not overlap"
        previous_end = piece.end_line
        assert list(piece.calls) == sorted(set(piece.calls))
        covered.update(range(piece.start_line, piece.end_line + 1))
    missing = [n for n, line in enumerate(lines, start=1) if line.strip() and n not in covered]
    assert not missing, f"non-blank lines not in any chunk: {missing}"


# -- generated Python ---------------------------------------------------------------

identifiers = st.sampled_from(["alpha", "beta", "gamma", "parse_header", "run", "x", "Data"])
blank_lines = st.integers(min_value=0, max_value=2).map(lambda n: "\n" * n)


@st.composite
def python_statement(draw: st.DrawFn, indent: str) -> str:
    name = draw(identifiers)
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return f"{indent}{name} = {draw(identifiers)}({draw(st.integers(0, 99))})\n"
    if choice == 1:
        return f"{indent}# note about {name}\n"
    if choice == 2:
        return f"{indent}if {name}:\n{indent}    {name}.call()\n"
    if choice == 3:
        return f'{indent}"""A docstring\n{indent}spanning lines."""\n'
    return f"{indent}import {name}\n"


@st.composite
def python_function(draw: st.DrawFn, indent: str, depth: int = 0) -> str:
    name = draw(identifiers)
    out = ""
    if draw(st.booleans()):
        out += f"{indent}# comment above {name}\n"
    for _ in range(draw(st.integers(0, 2))):
        out += f"{indent}@decorator_{draw(identifiers)}\n"
    out += f"{indent}def {name}(a, b=1):\n"
    body = indent + "    "
    statements = draw(st.lists(python_statement(body), min_size=1, max_size=8))
    out += "".join(statements)
    if depth == 0 and draw(st.booleans()):
        out += draw(python_function(body, depth + 1))
    out += f"{body}return {draw(identifiers)}(a)\n"
    return out


@st.composite
def python_class(draw: st.DrawFn) -> str:
    out = f"class {draw(identifiers).title()}(Base):\n"
    members = draw(
        st.lists(
            st.one_of(python_statement("    "), python_function("    ")), min_size=1, max_size=5
        )
    )
    for member in members:
        out += member + draw(blank_lines)
    return out


@st.composite
def python_module(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.one_of(python_statement(""), python_function(""), python_class()),
            min_size=0,
            max_size=8,
        )
    )
    text = "".join(part + draw(blank_lines) for part in parts)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(python_module(), st.booleans())
def test_generated_python_chunks_are_exact_and_cover_every_line(text: str, small: bool) -> None:
    budget = SMALL_BUDGET if small else ChunkBudget()
    check_invariants(text, chunk_file(text, "python", "gen.py", budget=budget))


# -- generated JavaScript -------------------------------------------------------------


@st.composite
def js_item(draw: st.DrawFn) -> str:
    name = draw(identifiers)
    kind = draw(st.integers(0, 5))
    comment = f"/**\n * Docs for {name}.\n */\n" if draw(st.booleans()) else ""
    body = "".join(
        f"  const v{i} = {draw(identifiers)}.{draw(identifiers)}({i});\n"
        for i in range(draw(st.integers(0, 15)))
    )
    if kind == 0:
        return f"{comment}function {name}(a) {{\n{body}  return a;\n}}\n"
    if kind == 1:
        return f"{comment}export const {name} = (a) => {{\n{body}}};\n"
    if kind == 2:
        methods = "".join(
            f"  // method {i}\n  m{i}(x) {{\n  {body}  return this.m{i}(x);\n  }}\n"
            for i in range(draw(st.integers(0, 3)))
        )
        return f"{comment}export class {name.title()} extends Base {{\n  field = 1;\n{methods}}}\n"
    if kind == 3:
        return f"import {{ {name} }} from './{name}';\n"
    if kind == 4:
        return f"{name}({draw(st.integers(0, 9))}); {name}.go();\n"
    return f"const {name} = function () {{ return {name}; }}, other = 2;\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(js_item(), max_size=8), st.lists(blank_lines, min_size=8, max_size=8), st.booleans()
)
def test_generated_javascript_chunks_are_exact_and_cover_every_line(
    items: list[str], gaps: list[str], small: bool
) -> None:
    text = "".join(item + gap for item, gap in zip(items, gaps, strict=False))
    budget = SMALL_BUDGET if small else ChunkBudget()
    for language, path in (("javascript", "gen.js"), ("typescript", "gen.ts")):
        check_invariants(text, chunk_file(text, language, path, budget=budget))


# -- arbitrary text never breaks the chunker -----------------------------------------

code_alphabet = st.sampled_from(
    [
        *(string.ascii_letters + string.digits + "(){}[]:;.,=+-*/#'\"<>!?@$&|\\\t "),
        *["\n", "\n", "\n", "\r\n", "def ", "class ", "function ", "fn ", "func ", "end"],
        *["é", "→"],
    ]
)
code_like_text = st.lists(code_alphabet, max_size=300).map("".join)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(code_like_text, st.text(max_size=300)),
    st.sampled_from(
        [
            ("python", "a.py"),
            ("javascript", "a.js"),
            ("typescript", "a.ts"),
            ("tsx", "a.tsx"),
            ("go", "a.go"),
            ("rust", "a.rs"),
            ("java", "A.java"),
            ("c", "a.c"),
            ("c", "a.h"),
            ("cpp", "a.cpp"),
            ("csharp", "a.cs"),
            ("ruby", "a.rb"),
            ("php", "a.php"),
        ]
    ),
    st.booleans(),
)
def test_any_text_in_any_grammar_keeps_the_invariants(
    text: str, language_path: tuple[str, str], small: bool
) -> None:
    language, path = language_path
    budget = SMALL_BUDGET if small else ChunkBudget()
    check_invariants(text, chunk_file(text, language, path, budget=budget))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=2000), st.sampled_from([None, "markdown", "yaml"]))
def test_windows_cover_every_line_of_any_text(text: str, language: str | None) -> None:
    pieces = chunk_file(text, language, "notes.txt", budget=SMALL_BUDGET)
    check_invariants(text, pieces, overlapping=True)
    assert all(p.kind == "window" and p.symbol is None and p.calls == () for p in pieces)


prose_lines = st.one_of(
    st.text(alphabet=string.ascii_letters + " .,#=-`~", max_size=30),
    st.sampled_from(["# Title", "## Section two", "Heading", "=======", "-------", "```", ""]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(prose_lines, max_size=80), st.sampled_from(["markdown", "rst"]))
def test_documentation_pages_are_covered_by_sections_or_windows_with_prose_sections(
    lines: list[str], language: str
) -> None:
    text = "\n".join(lines) + "\n"
    pieces = chunk_file(text, language, "docs/page.txt", budget=SMALL_BUDGET, prose_sections=True)
    sections = bool(pieces) and pieces[0].kind == "section"
    check_invariants(text, pieces, overlapping=not sections)
    assert all(p.kind == ("section" if sections else "window") for p in pieces)


@pytest.mark.parametrize("text", ["", "\n", "\n\n   \n\t\n", "\r\n\r\n"])
@pytest.mark.parametrize("language", ["python", "go", None])
def test_empty_and_blank_files_have_no_chunks(text: str, language: str | None) -> None:
    assert chunk_file(text, language, "empty") == []
