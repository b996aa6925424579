"""Reading a repository file (YAML or JSON) into entries that remember their line numbers.

The file is a mapping::

    prune: false            # optional; true removes repositories the file added and no longer lists
    repositories:
      - url: https://github.com/pallets/flask
        name: flask          # optional
        branch: main         # optional; default: the remote's default branch
        branches: [release/*, dev]   # optional; more branches to index (names or globs)
        visibility_groups: [team-a]
        poll_interval_secs: 300
        contextual_summaries: false

Every structural problem (not YAML/JSON, a wrong type, an unknown or repeated field, a missing
``url``) is collected with its line, so one run names all of them. ``.json`` files are read as
JSON (positions tracked by a decoder whose objects know their line), anything else as YAML
(PyYAML's node marks).
"""

from __future__ import annotations

import hashlib
import json
import json.decoder
import json.scanner
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ENTRY_FIELDS: dict[str, str] = {
    "url": "a string",
    "name": "a string",
    "branch": "a string",
    "branches": "a list of branch names or globs",
    "visibility_groups": "a list of group names",
    "poll_interval_secs": "a whole number of seconds >= 0, or null",
    "contextual_summaries": "true or false",
}
TOP_LEVEL_FIELDS = ("prune", "repositories")
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Problem:
    line: int  # 0: the file as a whole
    message: str

    def shown(self, path: str) -> str:
        return f"{path}:{self.line}: {self.message}" if self.line else f"{path}: {self.message}"


class RepositoryFileInvalid(Exception):
    """The file cannot be applied; ``problems`` say where and why (nothing was changed)."""

    def __init__(self, path: str, problems: list[Problem], *, transient: bool = False) -> None:
        self.path = path
        self.transient = transient  # a lookup failed just now: worth trying the same file again
        self.problems = sorted(problems, key=lambda problem: problem.line)
        super().__init__("\n".join(problem.shown(path) for problem in self.problems))


@dataclass(frozen=True)
class Located:
    """A value read from the file and the (1-based) line it is on."""

    value: Any
    line: int


@dataclass
class Entry:
    """One repository of the file: its fields as written (validated types) and its line."""

    line: int
    fields: dict[str, Located] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        found = self.fields.get(name)
        return default if found is None else found.value

    def line_of(self, name: str) -> int:
        found = self.fields.get(name)
        return self.line if found is None else found.line


@dataclass
class RepositoryFile:
    path: str
    sha256: str
    prune: bool
    entries: list[Entry]
    # Found while reading; the planner adds its own and refuses the file if there are any.
    problems: list[Problem] = field(default_factory=list)


def read_repository_file(path: str | Path) -> RepositoryFile:
    """Parse and type-check ``path``: raises ``RepositoryFileInvalid`` when it cannot be read
    or parsed; other problems are listed in ``problems`` with their lines."""
    shown = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RepositoryFileInvalid(
            shown, [Problem(0, f"cannot read it: {error.strerror}")]
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise RepositoryFileInvalid(shown, [Problem(0, f"larger than {MAX_FILE_BYTES} bytes")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise RepositoryFileInvalid(shown, [Problem(line, "not UTF-8 text")]) from None
    problems: list[Problem] = []
    parse = _parse_json if shown.lower().endswith(".json") else _parse_yaml
    root = parse(text, problems)
    if root is None:
        raise RepositoryFileInvalid(shown, problems)
    prune, entries = _read_root(root, problems)
    return RepositoryFile(
        path=shown,
        sha256=hashlib.sha256(data).hexdigest(),
        prune=prune,
        entries=entries,
        problems=problems,
    )


# --- structure ---------------------------------------------------------------------------------


def _read_root(root: Located, problems: list[Problem]) -> tuple[bool, list[Entry]]:
    if not isinstance(root.value, dict):
        problems.append(
            Problem(root.line, "expected a mapping with 'repositories:' (and 'prune:')")
        )
        return False, []
    mapping: dict[str, Located] = root.value
    for key, item in mapping.items():
        if key not in TOP_LEVEL_FIELDS:
            problems.append(
                Problem(
                    item.line, f"unknown field {key!r} (expected {', '.join(TOP_LEVEL_FIELDS)})"
                )
            )
    prune = False
    if "prune" in mapping:
        if isinstance(mapping["prune"].value, bool):
            prune = mapping["prune"].value
        else:
            problems.append(Problem(mapping["prune"].line, "prune must be true or false"))
    listed = mapping.get("repositories")
    if listed is None:
        problems.append(Problem(root.line, "'repositories:' is missing (a list of repositories)"))
        return prune, []
    if not isinstance(listed.value, list):
        problems.append(Problem(listed.line, "repositories must be a list"))
        return prune, []
    return prune, [entry for item in listed.value if (entry := _read_entry(item, problems))]


def _read_entry(item: Located, problems: list[Problem]) -> Entry | None:
    if not isinstance(item.value, dict):
        problems.append(Problem(item.line, "a repository must be a mapping with at least 'url'"))
        return None
    entry = Entry(line=item.line)
    for key, value in item.value.items():
        if key not in ENTRY_FIELDS:
            problems.append(
                Problem(
                    value.line, f"unknown field {key!r} (expected one of {', '.join(ENTRY_FIELDS)})"
                )
            )
            continue
        problem = _type_problem(key, value.value)
        if problem:
            problems.append(Problem(value.line, problem))
            continue
        entry.fields[key] = Located(_plain(value.value), value.line)
    if "url" not in item.value:
        problems.append(Problem(item.line, "'url' is missing"))
    return entry if "url" in entry.fields else None


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(item.value if isinstance(item, Located) else item) for item in value]
    return value


def _type_problem(key: str, value: Any) -> str:
    wanted = ENTRY_FIELDS[key]
    if key in ("url", "name", "branch"):
        ok = isinstance(value, str) and bool(value.strip()) and "\x00" not in value
    elif key in ("visibility_groups", "branches"):
        ok = isinstance(value, list) and all(
            isinstance(item.value, str) and item.value.strip() for item in value
        )
    elif key == "poll_interval_secs":
        ok = value is None or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        )
    else:
        ok = isinstance(value, bool)
    return "" if ok else f"{key} must be {wanted}, not {_shown(value)}"


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)[:60]


# --- YAML: values from the node tree, lines from the nodes' marks ------------------------------


def _parse_yaml(text: str, problems: list[Problem]) -> Located | None:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            problems.append(Problem(1, "the file is empty (expected 'repositories:')"))
            return None
        return _from_node(loader, node, problems)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        problems.append(Problem(line, f"not valid YAML: {error.problem or error.context}"))
        return None
    except yaml.YAMLError as error:
        problems.append(Problem(1, f"not valid YAML: {error}"))
        return None
    finally:
        loader.dispose()


def _from_node(loader: yaml.SafeLoader, node: yaml.Node, problems: list[Problem]) -> Located:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, Located] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                problems.append(Problem(key_line, f"field names are strings, not {key!r}"))
            elif key in mapping:
                problems.append(Problem(key_line, f"{key!r} is given twice"))
            else:
                value = _from_node(loader, value_node, problems)
                mapping[key] = Located(value.value, key_line)
        return Located(mapping, line)
    if isinstance(node, yaml.SequenceNode):
        return Located([_from_node(loader, item, problems) for item in node.value], line)
    return Located(loader.construct_object(node, deep=True), line)


# --- JSON: a decoder whose objects remember where they start -----------------------------------


class _JsonObject(dict[str, Any]):
    line = 1
    key_lines: dict[str, int]
    duplicates: list[tuple[str, int]]


def _parse_json(text: str, problems: list[Problem]) -> Located | None:
    decoder = json.JSONDecoder()

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        source, start = s_and_end
        collected: list[list[tuple[str, Any]]] = []

        def keep_pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
            collected.append(pairs)
            return pairs

        strict, scan_once, object_hook, _pairs_hook, memo = args[:5]
        _, end = json.decoder.JSONObject(  # type: ignore[attr-defined]
            s_and_end, strict, scan_once, object_hook, keep_pairs, memo
        )
        span = source[start:end]
        result = _JsonObject()
        result.line = source.count("\n", 0, start) + 1
        result.key_lines, result.duplicates = {}, []
        for key, value in collected[0]:
            found = re.search(re.escape(json.dumps(key)) + r"\s*:", span)
            key_line = result.line + (span.count("\n", 0, found.start()) if found else 0)
            if key in result:
                result.duplicates.append((key, key_line))
                continue
            result[key] = value
            result.key_lines[key] = key_line
        return result, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        value = decoder.decode(text)
    except json.JSONDecodeError as error:
        problems.append(Problem(error.lineno, f"not valid JSON: {error.msg}"))
        return None
    return _located_json(value, 1, problems)


def _located_json(value: Any, line: int, problems: list[Problem]) -> Located:
    if isinstance(value, _JsonObject):
        for key, key_line in value.duplicates:
            problems.append(Problem(key_line, f"{key!r} is given twice"))
        return Located(
            {
                key: Located(
                    _located_json(item, value.key_lines[key], problems).value, value.key_lines[key]
                )
                for key, item in value.items()
            },
            value.line,
        )
    if isinstance(value, list):
        return Located([_located_json(item, line, problems) for item in value], line)
    return Located(value, line)
