"""What a hostile or broken remote does that no retry can fix, told to the user at once.

- A redirect the HTTP client will not follow: to ``file://`` (no host), ``ftp://`` or any scheme
  but http(s), or round in a loop. urllib3 raises for each; without this they fell through to
  "fetch failed (GitProtocolError)" and were retried for minutes.
- Objects that are not what git allows: a tree whose entry is named ``..``, ``.git`` or holds a
  ``/`` (a path out of the checkout), an invalid mode, an object that does not parse, a pack whose
  checksum or deltas are wrong. The fetched tip's trees are checked (as ``git fsck`` would) before
  the clone is accepted, so the index stage never reads them.
"""

from __future__ import annotations

from collections.abc import Iterable

from dulwich.errors import ApplyDeltaError, ChecksumMismatch, ObjectFormatException
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.repo import Repo

from indexing.git.errors import GitFetchError

CORRUPT_OBJECT_ERRORS = (ObjectFormatException, ChecksumMismatch, ApplyDeltaError)
TREE_MODE = 0o040000


class RefusedRedirect(GitFetchError):
    """The server redirected somewhere the fetch does not follow."""


class CorruptObject(GitFetchError):
    """The server sent an object git would reject; the repository there is damaged or hostile."""


def refused_redirect(chain: Iterable[BaseException]) -> RefusedRedirect | None:
    """The plain error for a redirect urllib3 refused to follow, if the chain holds one."""
    for item in chain:
        name, text = type(item).__name__, str(item)
        if name == "URLSchemeUnknown":
            scheme = text.rsplit(" ", 1)[-1] if "scheme" in text else "another scheme"
            return RefusedRedirect(
                f"the server redirected to a {scheme}:// URL; only http and https are followed"
            )
        if name == "LocationValueError":
            return RefusedRedirect(
                "the server redirected to a URL without a host (such as file://); only http and "
                "https redirects are followed"
            )
        if name == "ResponseError" and "too many redirects" in text:
            return RefusedRedirect("the server redirected too many times (a redirect loop)")
    return None


def corrupt_object(chain: Iterable[BaseException]) -> CorruptObject | None:
    for item in chain:
        if isinstance(item, CORRUPT_OBJECT_ERRORS):
            return CorruptObject(_corrupt_message(item))
    return None


def _corrupt_message(error: BaseException) -> str:
    detail = str(error).strip()[:200] or type(error).__name__
    return f"the server sent a corrupt git object ({detail}); the repository there is damaged"


def check_fetched_tip(repo: Repo, sha: bytes) -> None:
    """Parse and check the commit and every tree under it; raise ``CorruptObject``."""
    try:
        commit = repo[ObjectID(sha)]
        if not isinstance(commit, Commit):
            return  # the caller reports a branch that does not point to a commit
        commit.check()
        pending = [commit.tree]
        seen: set[bytes] = set()
        while pending:
            tree_sha = pending.pop()
            if tree_sha in seen:
                continue
            seen.add(tree_sha)
            tree = repo[tree_sha]
            if not isinstance(tree, Tree):
                raise ObjectFormatException(f"{tree_sha.decode()} is not a tree")
            tree.check()
            pending.extend(entry.sha for entry in tree.items() if entry.mode == TREE_MODE)
    except CORRUPT_OBJECT_ERRORS as error:
        raise CorruptObject(_corrupt_message(error)) from error
    except KeyError as error:
        raise CorruptObject(
            "the server sent an incomplete pack (an object of the tip commit is missing)"
        ) from error
