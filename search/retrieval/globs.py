"""Path globs as anchored PostgreSQL regexes: the ``file:`` / ``path:`` filters and ``paths``
of every search mode (``search.retrieval.scope``).

Path globs are fnmatch-style and translated to an anchored PostgreSQL regular expression:
``*`` and ``?`` stay within one path segment, ``**`` crosses directories, ``[abc]`` / ``[!a]``
are character classes, and a glob without ``/`` matches the file name in any directory
(``*.py``, ``test_*.go``); a glob ending in ``/`` matches everything under that directory.
Every other character is escaped, so a glob can never inject regex syntax.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from reposearch.domain_errors import DomainError

MAX_GLOBS = 20
MAX_GLOB_LENGTH = 300


class InvalidGlob(DomainError, ValueError):
    """A path glob the search cannot use; the API names the ``paths`` field."""

    def api_code(self) -> str:
        return "invalid"

    def api_message(self) -> str:
        return "paths: " + str(self)

    def api_details(self) -> dict[str, Any]:
        return {"field": "paths"}


def glob_to_regex(glob: str) -> str:
    """An anchored PostgreSQL (ARE) regex for one fnmatch-style path glob."""
    if not glob or len(glob) > MAX_GLOB_LENGTH or "\x00" in glob:
        raise InvalidGlob(f"path glob must be 1..{MAX_GLOB_LENGTH} characters")
    pattern = glob.lstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    prefix = "^" if "/" in pattern.rstrip("/") else "^(?:.*/)?"
    if pattern.endswith("/"):
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            body = pattern[i + 1 : end] if end != -1 else ""
            negate = body[:1] in ("!", "^")
            members = body[1:] if negate else body
            if end != -1 and members and re.fullmatch(r"[\w.\-]+", members):
                escaped = "".join(_class_member(m) for m in members)
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end + 1
                continue
            out.append(_literal(ch))
        else:
            out.append(_literal(ch))
        i += 1
    return prefix + "".join(out) + "$"


def _literal(ch: str) -> str:
    return ch if ch.isalnum() or ch == "/" else "\\" + ch


def _class_member(ch: str) -> str:
    # A range needs its dash; anything else in a class is a plain member.
    return ch if ch.isalnum() or ch in "-_" else "\\" + ch


def exact_path_regex(path: str) -> str:
    """An anchored PostgreSQL regex matching ``path`` and nothing else."""
    if not path or len(path) > MAX_GLOB_LENGTH or "\x00" in path:
        raise InvalidGlob(f"a path must be 1..{MAX_GLOB_LENGTH} characters")
    return "^" + "".join(_literal(ch) for ch in path.lstrip("/")) + "$"


def paths_regex(globs: Sequence[str] | None) -> str | None:
    if not globs:
        return None
    if len(globs) > MAX_GLOBS:
        raise InvalidGlob(f"at most {MAX_GLOBS} path globs")
    return "|".join(f"(?:{glob_to_regex(g)})" for g in globs)
