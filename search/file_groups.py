"""Search hits grouped by file: one grouping for the API's ``group_by: "file"`` pages, its
response document and the results page alike.

A hybrid search ranks chunks, so a file may come back several times; a code host shows it once,
at the rank of its best chunk, with its other chunks under it. ``group_by_file`` keeps that
order: groups in the order of their first item, each group's items in their own order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

Item = TypeVar("Item")


def group_by_file(items: Iterable[Item], file_of: Callable[[Item], Hashable]) -> list[list[Item]]:
    """``items`` in groups of equal ``file_of(item)``, the groups in order of their best (first)
    item."""
    groups: dict[Hashable, list[Item]] = {}
    for item in items:
        groups.setdefault(file_of(item), []).append(item)
    return list(groups.values())


def hit_file(hit: Any) -> tuple[str, str, str]:
    """The file of an executor hit (``SearchHit``): repository, branch, path."""
    return (str(hit.repo_id), hit.branch, hit.file_path)


def document_file(hit: dict[str, Any]) -> tuple[str, str, str]:
    """The file of a hit of the response document (a dict with the API's field names)."""
    return (str(hit.get("repo_id")), str(hit.get("branch") or ""), str(hit.get("file_path")))
