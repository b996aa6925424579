"""``.dockerignore`` as moby/patternmatcher reads and matches it: which files of a build context
a ``COPY`` sends (``tests.image_assembly`` assembles the image from them)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class UnsupportedStep(Exception):
    """A Dockerfile step this emulation cannot reproduce: teach this module, do not skip it."""


@dataclass(frozen=True)
class IgnorePattern:
    text: str
    exception: bool
    regex: re.Pattern[str]


def pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ["^"]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            if pattern[index + 1 : index + 2] == "*":
                index += 1
                if pattern[index + 1 : index + 2] == "/":  # "**/": any number of folders
                    index += 1
                    out.append("(.*/)?")
                else:
                    out.append(".*")
            else:
                out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end < 0:
                raise UnsupportedStep(f".dockerignore: unclosed [ in {pattern!r}")
            body = pattern[index + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            index = end
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    out.append("$")
    return re.compile("".join(out))


def read_dockerignore(text: str) -> list[IgnorePattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        line = line[1:].strip() if exception else line
        cleaned = os.path.normpath(line).replace(os.sep, "/")
        if len(cleaned) > 1 and cleaned.startswith("/"):
            cleaned = cleaned[1:]
        patterns.append(IgnorePattern(cleaned, exception, pattern_regex(cleaned)))
    return patterns


def is_ignored(path: str, patterns: Sequence[IgnorePattern]) -> bool:
    """Whether ``path`` (relative to the context, with /) stays out of the build context: the last
    pattern that matches it or one of its parent folders decides (``!`` lets it back in)."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: length + 1]) for length in range(len(parts))]
    ignored = False
    for pattern in patterns:
        if any(pattern.regex.match(candidate) for candidate in candidates):
            ignored = not pattern.exception
    return ignored


def _may_hold_exceptions(folder: str, patterns: Sequence[IgnorePattern]) -> bool:
    return any(
        p.exception and (p.text.startswith(folder + "/") or not p.text[:1].isalnum())
        for p in patterns
    )


def context_files(context: Path, patterns: Sequence[IgnorePattern]) -> list[str]:
    """Every file and symbolic link of the build context that ``.dockerignore`` lets through."""
    kept: list[str] = []
    for folder, dirnames, filenames in os.walk(context):
        relative = Path(folder).relative_to(context).as_posix()
        prefix = "" if relative == "." else relative + "/"
        walk_into = []
        for name in sorted(dirnames):
            path = prefix + name
            if (context / path).is_symlink():
                filenames.append(name)
            elif not is_ignored(path, patterns) or _may_hold_exceptions(path, patterns):
                walk_into.append(name)
        dirnames[:] = walk_into
        kept += [
            prefix + name for name in sorted(filenames) if not is_ignored(prefix + name, patterns)
        ]
    return sorted(kept)
