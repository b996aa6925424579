"""The prose of a chunk: its doc comment or docstring, and the headings of a documentation page.

Language-neutral and regex-based (the chunker already cut the definition out):

* a **leading comment block** -- ``//``, ``///``, ``//!``, ``#``, ``--``, ``;``, ``/* ... */``,
  ``/** ... */`` lines at the top of the chunk, with attribute and decorator lines
  (``#[derive]``, ``@Override``, ``@app.route``) skipped -- as Go, Rust, Java, C, JavaScript,
  TypeScript, Ruby and PHP write them above a definition;
* or a **docstring** (preferred when both exist): the first string literal (``\"\"\"``, ``'''``) right after a Python
  ``def``/``class`` line, or at the very top of a module.

``first_paragraph`` keeps the summary: the text up to the first blank line, whitespace
collapsed, capped at ``max_chars`` (on a word boundary). Nothing here raises on odd input: a
chunk without prose gives ``""``.
"""

from __future__ import annotations

import re

_COMMENT_LINE = re.compile(r"^\s*(?:///?!?|#(?![\[!])|--|;+|\*(?!/)|/\*\*?|\*/)")
_ATTRIBUTE_LINE = re.compile(r"^\s*(?:#\[|#!\[|@[\w.]+)")
_COMMENT_MARKERS = re.compile(r"^\s*(?:///?!?|#|--|;+|/\*\*?|\*/|\*)\s?|\s*\*/\s*$")
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s")
_DOCSTRING_START = re.compile(r"^\s*[rRuU]?(\"\"\"|''')")
_RST_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+.:_])\1{2,}\s*$")
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_WS = re.compile(r"\s+")
_MAX_SCAN_LINES = 40


def first_paragraph(text: str, max_chars: int = 300) -> str:
    """The text up to its first blank line, on one line, at most ``max_chars`` (word-cut)."""
    paragraph = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    flat = _WS.sub(" ", paragraph).strip()
    if len(flat) <= max_chars:
        return flat
    cut = flat[:max_chars].rsplit(" ", 1)[0]
    return cut or flat[:max_chars]


def _leading_comment(lines: list[str]) -> str:
    kept: list[str] = []
    in_block = False
    for line in lines[:_MAX_SCAN_LINES]:
        stripped = line.strip()
        if in_block:
            kept.append(_COMMENT_MARKERS.sub("", line))
            if "*/" in stripped:
                in_block = False
            continue
        if not stripped:
            if kept:
                kept.append("")
            continue
        if _ATTRIBUTE_LINE.match(line):
            continue
        if _COMMENT_LINE.match(line):
            if stripped.startswith("/*") and "*/" not in stripped:
                in_block = True
            kept.append(_COMMENT_MARKERS.sub("", line))
            continue
        break
    return "\n".join(kept).strip()


def _docstring_at(lines: list[str], index: int) -> str:
    match = _DOCSTRING_START.match(lines[index])
    if match is None:
        return ""
    quote = match.group(1)
    rest = lines[index][match.end() :]
    if quote in rest:
        return rest.split(quote, 1)[0]
    body = [rest]
    for line in lines[index + 1 : index + _MAX_SCAN_LINES]:
        if quote in line:
            body.append(line.split(quote, 1)[0])
            break
        body.append(line)
    return "\n".join(body)


def _python_docstring(lines: list[str]) -> str:
    scan = lines[:_MAX_SCAN_LINES]
    for i, line in enumerate(scan):
        if _DOCSTRING_START.match(line) and (i == 0 or not any(s.strip() for s in scan[:i])):
            return _docstring_at(scan, i)  # a module docstring
        if _DEF_LINE.match(line):
            # The signature may run over several lines: the docstring is the first statement
            # after the line that ends it with ``:``.
            signature_done = line.split("#", 1)[0].rstrip().endswith(":")
            for j in range(i + 1, len(scan)):
                if not scan[j].strip():
                    continue
                if signature_done:
                    return _docstring_at(scan, j)
                signature_done = scan[j].split("#", 1)[0].rstrip().endswith(":")
            return ""
    return ""


def doc_comment(content: str) -> str:
    """The doc comment or docstring of a chunk (raw text, markers removed), or ``""``."""
    lines = content.split("\n")
    # A docstring says what the definition does; a comment above a Python ``def`` is more
    # often a note (``# TODO``), so the docstring wins when both exist.
    return _python_docstring(lines) or _leading_comment(lines)


def summary(content: str, max_chars: int = 300) -> str:
    """The first paragraph of the chunk's doc comment or docstring, or ``""``."""
    return first_paragraph(doc_comment(content), max_chars)


def headings(text: str) -> list[tuple[int, str]]:
    """(1-based line, title) of every reStructuredText or Markdown heading in ``text``."""
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        md = _MD_HEADING.match(line)
        if md:
            found.append((i + 1, md.group(2).strip()))
            continue
        if (
            i + 1 < len(lines)
            and line.strip()
            and not _RST_UNDERLINE.match(line)
            and _RST_UNDERLINE.match(lines[i + 1])
            and len(lines[i + 1].strip()) >= len(line.strip()) - 2
        ):
            found.append((i + 1, line.strip()))
    return found
