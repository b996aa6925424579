"""Shared pieces of the git fetch tests: a fetch and an update with test limits, the test token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from indexing.git.fetch import fetch_branch, fetch_update

TOKEN = "ghp_S3cretTokenValue0123456789"
MB = 1024 * 1024


def fetch(url: str, target: Path, **kwargs: Any) -> Any:
    options: dict[str, Any] = {"max_bytes": 50 * MB, "timeout_s": 30.0, "allow_private_hosts": True}
    options.update(kwargs)
    return fetch_branch(url, target, **options)


def fetch_again(target: Path, url: str, branch: str = "main", **kwargs: Any) -> Any:
    """``fetch_update`` of an earlier fetch, with a 1 MB limit, 30 s and private hosts allowed."""
    options: dict[str, Any] = {"max_bytes": MB, "timeout_s": 30, "allow_private_hosts": True}
    options.update(kwargs)
    return fetch_update(target, url, branch, **options)


def files_under(path: Path) -> list[Path]:
    return [Path(root) / name for root, _dirs, names in os.walk(path) for name in names]
