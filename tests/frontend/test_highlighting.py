"""Highlighted lines keep their real numbers, mark the query's words and escape the source."""

from __future__ import annotations

from frontend.highlighting import highlight_lines, query_terms, snippet_window

PYTHON = '''def parse_http_header(line):
    """Split one header line."""
    name, _, value = line.partition(":")
    return name, value
'''


def test_lines_are_numbered_from_the_chunk_start_line() -> None:
    lines = highlight_lines(PYTHON, path="src/parser.py", first_line=40)
    assert [line.number for line in lines] == [40, 41, 42, 43]
    assert 'class="k"' in lines[0].html  # "def" is a keyword
    assert 'class="nf"' in lines[0].html  # the function name


def test_a_docstring_spanning_lines_is_coloured_on_each_line() -> None:
    code = 'def f():\n    """one\n    two"""\n'
    lines = highlight_lines(code, path="a.py")
    assert len(lines) == 3
    assert 'class="sd"' in lines[1].html and 'class="sd"' in lines[2].html


def test_query_words_are_marked_case_insensitively_inside_identifiers() -> None:
    lines = highlight_lines(PYTHON, path="p.py", terms=query_terms("HTTP header parsing"))
    assert "<mark>http</mark>" in lines[0].html
    assert "<mark>header</mark>" in lines[0].html
    assert lines[0].has_match and not lines[3].has_match


def test_identifiers_in_the_query_are_split_and_stop_words_dropped() -> None:
    assert query_terms("where is parseHttpHeader") == ["parsehttpheader", "parse", "http", "header"]
    assert query_terms("retry_with_backoff") == ["retry_with_backoff", "retry", "backoff"]


def test_source_is_escaped() -> None:
    lines = highlight_lines("<script>alert('x')</script>\n", path="evil.html", terms=["script"])
    html = "".join(line.html for line in lines)
    assert "<script>" not in html
    assert "&lt;" in html and "<mark>script</mark>" in html


def test_unknown_files_and_blank_lines_keep_their_numbers() -> None:
    lines = highlight_lines("a\n\n\nb\n", path="notes.unknownext", first_line=7)
    assert [line.number for line in lines] == [7, 8, 9, 10]
    assert lines[3].html == "b"


def test_snippet_window_starts_near_the_first_match() -> None:
    code = "".join(f"line {n}\n" for n in range(1, 51)) + "needle\n"
    lines = highlight_lines(code, path="x.txt", first_line=100, terms=["needle"])
    shown, omitted = snippet_window(lines, 10)
    assert len(shown) == 10 and omitted == len(lines) - 10
    assert shown[-1].number == 150 and shown[-1].has_match
