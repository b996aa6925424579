"""The file-tree sidebar of a file page: the directories along the file's path expanded, their
other entries listed, every link a permalink at the same commit.

Bounded: each directory shows its first ``MAX_ENTRIES_PER_DIRECTORY`` entries (directories
first, as on tree pages) and a row saying how many more there are, linking to the directory's
page; the entry on the path is always shown, even past the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexing.git.tree import MODE_GITLINK, GitTreeReader
from indexing.permalinks import blob_url, tree_url

MAX_ENTRIES_PER_DIRECTORY = 100


@dataclass(frozen=True)
class TreeRow:
    depth: int
    name: str
    url: str  # "" for a submodule
    is_dir: bool = False
    open: bool = False  # a directory on the path, its entries listed below it
    current: bool = False  # the file the page shows
    more: int = 0  # a "N more" row: entries of this directory not listed

    @property
    def indent(self) -> int:
        """The CSS indentation step (``d0``..``d12``; inline styles are refused by the CSP)."""
        return min(self.depth, 12)


def sidebar_rows(
    reader: GitTreeReader,
    ref: str,
    commit: str,
    path: str,
    limit: int = MAX_ENTRIES_PER_DIRECTORY,
) -> list[TreeRow]:
    """Rows in display order, from the root directory down to ``path``'s directory."""
    parts = path.split("/")
    rows: list[TreeRow] = []

    def directory(prefix: str, depth: int) -> None:
        entries = reader.list_directory(commit, prefix) or []
        on_path = parts[depth] if depth < len(parts) else None
        shown = 0
        for name, is_dir, mode, _ in entries:
            here = name == on_path
            if shown >= limit and not here:
                continue
            shown += 1
            child = f"{prefix}/{name}" if prefix else name
            expand = is_dir and here and depth < len(parts) - 1
            url = (
                ""
                if mode == MODE_GITLINK
                else (tree_url if is_dir else blob_url)(ref, commit, child)
            )
            rows.append(
                TreeRow(
                    depth=depth,
                    name=name,
                    url=url,
                    is_dir=is_dir,
                    open=expand,
                    current=here and depth == len(parts) - 1,
                )
            )
            if expand:
                directory(child, depth + 1)
        if len(entries) > shown:
            rows.append(
                TreeRow(
                    depth=depth,
                    name="",
                    url=tree_url(ref, commit, prefix),
                    more=len(entries) - shown,
                )
            )

    directory("", 0)
    return rows
