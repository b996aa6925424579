"""Which commit a browse address names: ``HEAD``, a commit id, a prefix of the indexed commit, or
the name of an indexed branch, as a code host reads ``/blob/<branch>/<path>``.

A branch's name means the commit it was last indexed at (what search answers from), not the
remote's newest: ``/repos/acme/shop/-/blob/main/src/cart.py`` is the file search found. The
default branch is named by the repository's ``branch``, or, when it was added without one, by
the clone's ``HEAD`` (the branch the remote's ``HEAD`` resolved to at the last fetch). A name
holding ``/`` (``release/1.0``) runs on into the address's path; the longest indexed name wins.
Git refs take precedence over abbreviated commit ids, so a branch named like a hex prefix is
the branch. A name that is none of these is refused with the nearest indexed branch names.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

from dulwich.errors import NotGitRepository
from dulwich.refs import Ref
from dulwich.repo import Repo

from indexing.clone_paths import repository_dir
from indexing.models import Repository

FULL_SHA = re.compile(r"[0-9a-f]{40}")
SHORT_SHA = re.compile(r"[0-9a-f]{4,39}")
SHOWN_BRANCHES = 5


class AddressRefused(Exception):
    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def clone_default_branch(repository: Repository) -> str | None:
    """The branch the clone's ``HEAD`` names (set at each fetch of the default branch)."""
    try:
        with Repo(str(repository_dir(repository.pk))) as repo:
            target = repo.refs.get_symrefs().get(Ref(b"HEAD"))
    except (NotGitRepository, OSError, KeyError, ValueError):
        return None
    prefix = b"refs/heads/"
    if target is None or not target.startswith(prefix):
        return None
    return target[len(prefix) :].decode("utf-8", "replace")


def branch_commits(repository: Repository) -> dict[str, str]:
    """Each indexed branch's name and the commit it was indexed at ("" while never indexed),
    the default branch first."""
    found: dict[str, str] = {}
    default = repository.branch or clone_default_branch(repository)
    if default:
        found[default] = repository.last_indexed_commit if repository.active_generation else ""
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
    ``AddressRefused`` when it names nothing, or a branch not indexed yet."""
    indexed = repository.last_indexed_commit
    if commit == "HEAD" and not indexed:
        raise AddressRefused(f"{repository.name} has not finished indexing yet.")
    branches = branch_commits(repository)
    if commit == "HEAD" or FULL_SHA.fullmatch(commit):
        full = indexed if commit == "HEAD" else commit
        return Named(full, path, _branch_at(branches, full))
    parts = path.split("/") if path else []
    for taken in range(len(parts), -1, -1):
        name = "/".join([commit, *parts[:taken]])
        if name in branches:
            if not branches[name]:
                raise AddressRefused(f"Branch {name} of {repository.name} is not indexed yet.")
            return Named(branches[name], "/".join(parts[taken:]), name)
    if indexed and SHORT_SHA.fullmatch(commit) and indexed.startswith(commit):
        return Named(indexed, path, _branch_at(branches, indexed))
    raise AddressRefused(_nothing_named(repository, commit, sorted(branches)))


def _branch_at(branches: dict[str, str], commit: str) -> str:
    """The branch indexed at ``commit`` (the default one when several are)."""
    return next((name for name, indexed in branches.items() if indexed == commit), "")


def _nothing_named(repository: Repository, commit: str, branches: list[str]) -> str:
    message = f"“{commit[:80]}” is neither a commit nor an indexed branch of {repository.name}."
    near = difflib.get_close_matches(commit[:200], branches, n=3, cutoff=0.6)
    if near:
        return f"{message} Did you mean {' or '.join(near)}?"
    if branches:
        shown = ", ".join(branches[:SHOWN_BRANCHES])
        more = (
            f" and {len(branches) - SHOWN_BRANCHES} more" if len(branches) > SHOWN_BRANCHES else ""
        )
        return f"{message} Its indexed branches: {shown}{more}."
    return message
