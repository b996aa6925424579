"""The data directory is private: mode 0700, and the ``SECRET_KEY`` ``make up`` keeps in it.

The data directory holds the clones of restricted repositories, Redis's append-only file,
PostgreSQL's cluster and the passwords: no other local user may read it. ``make_private`` creates
it 0700, or takes the permissions of the group and of others off an existing one and off its
folders (a group given to the directory on purpose keeps "pass through": as root, the embedded
PostgreSQL's user reaches its cluster through its group, see ``embedded_services``). ``make up`` calls it before
anything starts, and so does every process's start-up guard (``reposearch.startup``) when the
directory exists, so a compose volume made before this rule is tightened too.

``ensure_secret_key`` writes a random key to ``<data>/secret-key`` (mode 0600) the first time
``make up`` starts, and the settings read it when ``SECRET_KEY`` is not set: sessions and CSRF
tokens are signed with a key nobody else has, the same one across restarts. This module imports
nothing from Django (the settings import it).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import stat
from pathlib import Path

from reposearch.embedded_credentials import keep_once

PRIVATE_MODE = 0o700
SECRET_KEY_FILE = "secret-key"  # noqa: S105 - a file name
MIN_SECRET_KEY_LENGTH = 32  # production settings refuse shorter keys


def make_private(root: Path, *, create: bool = True) -> list[Path]:
    """Creates ``root`` with mode 0700 (``create``), or tightens it and its folders; returns
    what it tightened. A folder this user cannot change (another owner's mount) is left alone."""
    root = Path(root)
    if not root.exists():
        if not create:
            return []
        root.mkdir(mode=PRIVATE_MODE, parents=True)
        root.chmod(PRIVATE_MODE)  # mkdir's mode is masked by the umask, never widened
        return []
    tightened = []
    folders = [
        root,
        *(child for child in root.iterdir() if child.is_dir() and not child.is_symlink()),
    ]
    for folder in folders:
        with contextlib.suppress(OSError):
            info = folder.stat()
            if info.st_uid != os.geteuid():
                continue
            mode = stat.S_IMODE(info.st_mode)
            # No one else. A group given to the directory on purpose (not its owner's own) may
            # still pass through it: as root, that is the embedded PostgreSQL's.
            passes = folder == root and info.st_gid != _own_group(info.st_uid)
            private = mode & ~(0o067 if passes else 0o077)
            if private != mode:
                folder.chmod(private)
                tightened.append(folder)
    return tightened


def private_folder(path: Path | str) -> Path:
    """Creates ``path`` and the parents it lacks with mode 0700, as ``make_private`` would leave
    them, so a folder the product makes in the data directory (clones, postings, Redis's) is
    private from the start and the next start-up has nothing to tighten. One that exists is left
    as it is. As ``Path.mkdir(parents=True)``: the folder first, its parent when that is missing
    (made by another process meanwhile, or removed by the postings sweep), then the folder again."""
    path = Path(path)
    try:
        path.mkdir(mode=PRIVATE_MODE)
    except FileExistsError:
        pass
    except FileNotFoundError:
        private_folder(path.parent)
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            path.mkdir(mode=PRIVATE_MODE)
    return path


def _own_group(uid: int) -> int | None:
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return None


def secret_key_path(root: Path) -> Path:
    return Path(root) / SECRET_KEY_FILE


def read_secret_key(root: Path) -> str | None:
    """The key kept in ``root``; None when there is none (or it is unreadable or too short)."""
    try:
        key = secret_key_path(root).read_text().strip()
    except OSError:
        return None
    return key if len(key) >= MIN_SECRET_KEY_LENGTH else None


def ensure_secret_key(root: Path) -> tuple[str, bool]:
    """The key kept in ``root``, generated now when there is none; True when generated."""
    return keep_once(
        secret_key_path(root),
        lambda: read_secret_key(root),
        lambda: secrets.token_urlsafe(50),
        lambda key: f"{key}\n",
    )
