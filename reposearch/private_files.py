"""A secret kept in a file only its owner can read, written once whoever starts first.

Both of ``make up``'s generated secrets (the services' passwords, ``embedded_credentials``, and
Django's key, ``data_folder``) use ``keep_once``: several processes may start at once, so the
file is written under a temporary name and linked into place, and a process that finds another's
file already there reads and uses that one.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def keep_once(
    path: Path, read: Callable[[], T | None], make: Callable[[], T], text: Callable[[T], str]
) -> tuple[T, bool]:
    """What ``read()`` finds in ``path``, else a new ``make()`` written there (mode 0600) as
    ``text(value)``; True when this call wrote it. An unreadable or incomplete file is replaced,
    never merged; a file made readable to others is tightened back to 0600."""
    existing = read()
    if existing is not None:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)  # someone loosened it: the secret is for this user only
        return existing, False
    fresh = make()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text(fresh))
        out.flush()
        os.fsync(out.fileno())
    try:
        if path.exists():  # unreadable or incomplete: replaced
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # fails when another process just wrote one
            temporary.unlink()
    except FileExistsError:
        temporary.unlink()
        winner = read()
        if winner is None:
            raise
        return winner, False
    return fresh, True
