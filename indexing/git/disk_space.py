"""A clone that runs out of disk space says so in plain words and is not retried.

The pack being written, its index, or the bare repository itself may hit ``ENOSPC`` (or a quota:
``EDQUOT``); whichever it was, the user sees one sentence naming the setting that says where
clones live. A retry in a few minutes would meet the same full disk, so the job fails at once
(``fetch_branch`` removes what it had written).
"""

from __future__ import annotations

import errno
from collections.abc import Iterable

from indexing.git.errors import GitFetchError

FULL_DISK = {errno.ENOSPC, errno.EDQUOT}


class NoSpaceLeft(GitFetchError):
    """The disk holding the clones is full."""


def no_space_left(chain: Iterable[BaseException]) -> NoSpaceLeft | None:
    for item in chain:
        if isinstance(item, OSError) and item.errno in FULL_DISK:
            return NoSpaceLeft(
                "no space left on the device for the clone (under REPO_SEARCH_DATA_DIR/repos); "
                "free some space, then index the repository again"
            )
    return None


def causes(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
