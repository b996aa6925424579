"""Labelled query sets for the evaluation harness: loading, validating, checking against a tree.

A query set is a JSON file::

    {"corpus": {"package": "flask", "version": "3.0.3"},
     "queries": [{"id": "...", "query": "...", "kind": "locate",
                  "expected": [{"path": "src/flask/app.py", "start_line": 10,
                                "end_line": 40, "symbol": "Flask.run"}]}]}

Every expected range must exist in the corpus; a ``symbol`` (the chunker's qualified name) must
be defined in the range, which starts at the definition. Python: the first line that is not a
comment is a ``def``/``class``/decorator line. Other languages: the first line that is not a
comment or an attribute names the symbol's last component (``Path`` of ``Route.Path`` in
``func (r *Route) Path(...)``). A ``heading`` (prose) must appear in the range. This module
needs neither Django nor a database, so the corpus fetch script and the tests can use it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUERY_KINDS = frozenset({"locate", "how", "identifier", "conceptual", "tests", "docs"})


@dataclass(frozen=True)
class ExpectedRange:
    path: str
    start_line: int
    end_line: int
    symbol: str = ""  # a definition's qualified name, as the chunker names it
    heading: str = ""  # for prose: a heading the range contains (not a symbol)

    def overlaps(self, path: str, start_line: int, end_line: int) -> bool:
        return path == self.path and start_line <= self.end_line and end_line >= self.start_line


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    query: str
    kind: str
    expected: tuple[ExpectedRange, ...]
    note: str = ""


@dataclass(frozen=True)
class QuerySet:
    queries: tuple[LabelledQuery, ...]
    corpus: dict[str, Any] = field(default_factory=dict)


class QuerySetError(ValueError):
    """The query file is malformed (the message names the query and the field)."""


def _expected(raw: Any, where: str) -> ExpectedRange:
    if not isinstance(raw, dict):
        raise QuerySetError(f"{where}: each expected entry must be an object")
    try:
        path, start, end = raw["path"], raw["start_line"], raw["end_line"]
    except KeyError as missing:
        raise QuerySetError(f"{where}: expected entry lacks {missing}") from None
    if not isinstance(path, str) or not path:
        raise QuerySetError(f"{where}: path must be a non-empty string")
    if not isinstance(start, int) or not isinstance(end, int) or not 1 <= start <= end:
        raise QuerySetError(f"{where}: need integers 1 <= start_line <= end_line")
    symbol = raw.get("symbol") or ""
    heading = raw.get("heading") or ""
    if not isinstance(symbol, str) or not isinstance(heading, str):
        raise QuerySetError(f"{where}: symbol and heading must be strings")
    return ExpectedRange(path, start, end, symbol, heading)


def parse_query_set(data: Any) -> QuerySet:
    """Validate the decoded JSON of a query file."""
    if isinstance(data, list):
        data = {"queries": data}
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise QuerySetError("a query file is an object with a 'queries' list")
    queries: list[LabelledQuery] = []
    seen: set[str] = set()
    for number, raw in enumerate(data["queries"], start=1):
        if not isinstance(raw, dict):
            raise QuerySetError(f"query {number}: must be an object")
        qid = str(raw.get("id") or number)
        where = f"query {qid}"
        if qid in seen:
            raise QuerySetError(f"{where}: duplicate id")
        seen.add(qid)
        text = raw.get("query")
        if not isinstance(text, str) or not text.strip():
            raise QuerySetError(f"{where}: 'query' must be a non-empty string")
        kind = raw.get("kind", "locate")
        if kind not in QUERY_KINDS:
            raise QuerySetError(f"{where}: kind {kind!r} not in {sorted(QUERY_KINDS)}")
        expected = raw.get("expected")
        if not isinstance(expected, list) or not expected:
            raise QuerySetError(f"{where}: 'expected' must be a non-empty list")
        queries.append(
            LabelledQuery(
                id=qid,
                query=text.strip(),
                kind=kind,
                expected=tuple(_expected(item, where) for item in expected),
                note=str(raw.get("note", "")),
            )
        )
    corpus = data.get("corpus") if isinstance(data.get("corpus"), dict) else {}
    return QuerySet(tuple(queries), corpus or {})


def load_query_set(path: Path | str) -> QuerySet:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise QuerySetError(f"{path}: not valid JSON ({error})") from None
    return parse_query_set(data)


def _definition_pattern(symbol: str) -> re.Pattern[str]:
    name = re.escape(symbol.rsplit(".", 1)[-1])
    return re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]", re.M)


def check_expected_range(root: Path, expected: ExpectedRange) -> str | None:
    """None when the range is valid in the tree at ``root``, else what is wrong with it."""
    file = root / expected.path
    if not file.is_file():
        return f"{expected.path}: no such file"
    lines = file.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if expected.end_line > len(lines):
        return f"{expected.path}: end_line {expected.end_line} > {len(lines)} lines"
    body = "\n".join(lines[expected.start_line - 1 : expected.end_line])
    if expected.heading and expected.heading not in body:
        return f"{expected.path}:{expected.start_line}-{expected.end_line}: heading {expected.heading!r} not found"
    if not expected.symbol:
        return None
    if file.suffix == ".py":
        if not _definition_pattern(expected.symbol).search(body):
            return f"{expected.path}:{expected.start_line}-{expected.end_line}: no definition of {expected.symbol}"
        body_lines = lines[expected.start_line - 1 : expected.end_line]
        head = next((x.lstrip() for x in body_lines if not x.lstrip().startswith("#")), "")
        if not head.startswith(("def ", "class ", "async def ", "@")) and "=" not in head:
            return f"{expected.path}:{expected.start_line}: range does not start at a definition"
    else:
        line = _first_code_line(lines[expected.start_line - 1 : expected.end_line])
        name = re.split(r"\.|::", expected.symbol)[-1]
        if line is None or not re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", line):
            return (
                f"{expected.path}:{expected.start_line}: the range does not start at the"
                f" definition of {expected.symbol!r} (its first code line: {line!r})"
            )
    return None


_COMMENT_OR_ATTRIBUTE = ("//", "/*", "*", "#[", "#![", "@", "--", ";")


def _first_code_line(lines: list[str]) -> str | None:
    """The first line that is not blank, a comment or an attribute/decorator (non-Python)."""
    in_block = False
    for line in lines:
        text = line.strip()
        if in_block:
            in_block = "*/" not in text
            continue
        if not text:
            continue
        if text.startswith("/*") and "*/" not in text:
            in_block = True
            continue
        if text.startswith(_COMMENT_OR_ATTRIBUTE):
            continue
        return text
    return None


def check_query_set(root: Path, query_set: QuerySet) -> list[str]:
    """Every problem of the query set against the corpus tree (empty when all ranges hold)."""
    problems = []
    for query in query_set.queries:
        for expected in query.expected:
            problem = check_expected_range(root, expected)
            if problem:
                problems.append(f"query {query.id}: {problem}")
    return problems
