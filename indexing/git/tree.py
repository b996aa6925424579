"""Reading a commit's tree straight from the git object store (no checkout needed)."""

from __future__ import annotations

from dataclasses import dataclass

# Git file modes we care about.
MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_SYMLINK = 0o120000
MODE_GITLINK = 0o160000  # a submodule: never fetched, never indexed


@dataclass(frozen=True)
class TreeEntry:
    """One blob in a commit's tree, as the walker sees it."""

    path: str  # POSIX path relative to the repository root, e.g. "src/app/main.py"
    mode: int  # git mode: MODE_FILE, MODE_EXECUTABLE, MODE_SYMLINK or MODE_GITLINK
    sha: str  # hex sha of the blob
    size: int  # blob size in bytes

    @property
    def is_symlink(self) -> bool:
        return self.mode == MODE_SYMLINK

    @property
    def is_submodule(self) -> bool:
        return self.mode == MODE_GITLINK
