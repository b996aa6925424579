"""Which commit a browse address names: ``HEAD``, a commit id, a prefix of an indexed commit, or
the name of an indexed branch, as a code host reads ``/blob/<branch>/<path>``.

A branch's name means the commit it was last indexed at (what search answers from), not the
remote's newest: ``/repos/acme/shop/-/blob/main/src/cart.py`` is the file search found. The
default branch is the repository's ``branch`` (the first fetch records the remote's default
there when none was given). A name holding ``/`` (``release/1.0``) runs on into the address's
path; the longest indexed name wins. Git refs take precedence over abbreviated commit ids, so a
branch named like a hex prefix is the branch. A name that is none of these is refused with the
nearest indexed branch names.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

from indexing.models import Repository

FULL_SHA = re.compile(r"[0-9a-f]{40}")
SHORT_SHA = re.compile(r"[0-9a-f]{4,39}")
SHOWN_BRANCHES = 5
COMPARED_BRANCHES = 1000  # names a misspelt one is compared with (difflib is quadratic)


class AddressRefused(Exception):
    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def branch_commits(repository: Repository) -> dict[str, str]:
    """Each branch's name and the commit it was indexed at ("" while never indexed), the
    default branch first."""
    found: dict[str, str] = {}
    if repository.branch:
        found[repository.branch] = (
            repository.last_indexed_commit if repository.active_generation else ""
        )
    for branch in repository.indexed_branches.all():
        found.setdefault(branch.name, branch.last_indexed_commit if branch.generation else "")
    return found


class Named(NamedTuple):
    commit: str  # the full commit id
    path: str  # the address's path after the commit's name
    branch: str  # the indexed branch whose indexed commit this is ("": none)


def resolve(repository: Repository, commit: str, path: str) -> Named:
    """The full commit ``commit`` names in ``repository``, the path the address goes on with (a
    branch name's later segments are taken from ``path``) and the indexed branch at that commit.
    ``AddressRefused`` when it names nothing, or only a branch not indexed yet."""
    indexed = repository.last_indexed_commit
    if commit == "HEAD" and not indexed:
        raise AddressRefused(f"{repository.name} has not finished indexing yet.")
    branches = branch_commits(repository)
    if commit == "HEAD" or FULL_SHA.fullmatch(commit):
        full = indexed if commit == "HEAD" else commit
        return Named(full, path, _branch_at(branches, full))
    parts = path.split("/") if path else []
    waiting = ""  # the longest name that is a branch not indexed yet
    for taken in range(len(parts), -1, -1):
        name = "/".join([commit, *parts[:taken]])
        if name not in branches:
            continue
        if branches[name]:
            return Named(branches[name], "/".join(parts[taken:]), name)
        waiting = waiting or name
    if waiting:
        raise AddressRefused(f"Branch {waiting} of {repository.name} is not indexed yet.")
    if SHORT_SHA.fullmatch(commit):
        known = {c for c in (indexed, *branches.values()) if c and c.startswith(commit)}
        if len(known) == 1:
            full = known.pop()
            return Named(full, path, _branch_at(branches, full))
        if known:
            raise AddressRefused(
                f"“{commit}” begins {len(known)} indexed commits of {repository.name};"
                " give more of the commit id.",
                400,
            )
    if not indexed and not any(branches.values()):
        raise AddressRefused(f"{repository.name} has not finished indexing yet.")
    raise AddressRefused(_nothing_named(repository, [commit, *parts], branches))


def _branch_at(branches: dict[str, str], commit: str) -> str:
    """The branch indexed at ``commit`` (the default one when several are)."""
    return next((name for name, indexed in branches.items() if indexed == commit), "")


def _nothing_named(repository: Repository, typed: list[str], branches: dict[str, str]) -> str:
    """Why the address names nothing, with the indexed branches it most resembles: each is
    compared with as many of the address's segments as its name has."""
    names = [name for name, indexed in branches.items() if indexed]
    scored: list[tuple[float, str, str]] = []
    for name in names[:COMPARED_BRANCHES]:
        given = "/".join(typed[: name.count("/") + 1])[:200]
        matcher = difflib.SequenceMatcher(None, given, name)
        # get_close_matches' order: the cheap upper bounds first
        if (
            matcher.real_quick_ratio() >= 0.6
            and matcher.quick_ratio() >= 0.6
            and (ratio := matcher.ratio()) >= 0.6
        ):
            scored.append((ratio, name, given))
    scored.sort(key=lambda found: (-found[0], found[1]))
    shown = scored[0][2] if scored else typed[0]
    message = f"“{shown[:80]}” is neither a commit nor an indexed branch of {repository.name}."
    if scored:
        return f"{message} Did you mean {' or '.join(name for _r, name, _g in scored[:3])}?"
    if names:
        listed = ", ".join(sorted(names)[:SHOWN_BRANCHES])
        more = f" and {len(names) - SHOWN_BRANCHES} more" if len(names) > SHOWN_BRANCHES else ""
        return f"{message} Its indexed branches: {listed}{more}."
    return message
