"""Reading a commit's tree straight from the git object store (no checkout needed)."""

from __future__ import annotations

import logging
import mmap
import os
import zlib
from dataclasses import dataclass

from dulwich.objects import Blob, Commit, ObjectID, Tree, hex_to_sha
from dulwich.repo import Repo

logger = logging.getLogger(__name__)

# Git file modes we care about.
MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_SYMLINK = 0o120000
MODE_GITLINK = 0o160000  # a submodule: never fetched, never indexed
MODE_TREE = 0o040000  # a directory


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


@dataclass(frozen=True)
class TreeDiff:
    """Blob-level difference between two commits' trees (no rename detection)."""

    added: list[TreeEntry]
    modified: list[TreeEntry]  # same path, different blob sha or mode (the new entry)
    deleted: list[str]  # paths present before and gone now

    @property
    def changed_paths(self) -> list[str]:
        return sorted([e.path for e in self.added] + [e.path for e in self.modified])


class GitTreeReader:
    """Reads trees and blobs of a bare repository; open once, reuse for a whole run.

    Never touches a working tree and never follows symlinks: a symlink is a blob whose
    content is the link target, reported with MODE_SYMLINK. Submodules (gitlinks) are
    reported with MODE_GITLINK and size 0; their commits are not in the store.
    """

    def __init__(self, repo_dir: str | os.PathLike[str]) -> None:
        self._repo = Repo(os.fspath(repo_dir))
        self._store = self._repo.object_store
        # `object_store.packs` lists the pack directory on every access; a reader works
        # on a fixed commit, so the list is taken once (and refreshed on a miss).
        self._packs = list(self._store.packs)

    def __enter__(self) -> GitTreeReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._repo.close()

    def list_tree(self, commit_sha: str) -> list[TreeEntry]:
        """Every blob, symlink and submodule in the commit's tree, sorted by path."""
        entries: list[TreeEntry] = []
        pending: list[tuple[str, ObjectID]] = [("", self._tree_id(commit_sha))]
        raw: list[tuple[str, int, ObjectID]] = []
        while pending:
            prefix, tree_id = pending.pop()
            for name, mode, sha in self._tree_items(tree_id):
                path = prefix + name
                if mode == _MODE_TREE:
                    pending.append((path + "/", sha))
                else:
                    raw.append((path, mode, sha))
        for path, mode, sha in raw:
            entries.append(self._entry(path, mode, sha))
        entries.sort(key=lambda entry: entry.path)
        return entries

    def read_blob(self, sha: str) -> bytes:
        """The full content of a blob (for a symlink: its target)."""
        type_num, data = self._store.get_raw(ObjectID(sha.encode("ascii")))
        if type_num != Blob.type_num:
            raise ValueError(f"{sha} is not a blob")
        return data

    def blob_size(self, sha: str) -> int:
        """Size in bytes of a blob, from the pack header when possible (no inflation)."""
        return self._blob_size(ObjectID(sha.encode("ascii")))

    def diff(self, old_commit: str, new_commit: str) -> TreeDiff:
        """Blobs added, modified and deleted between two commits (unchanged subtrees skipped)."""
        added: list[TreeEntry] = []
        modified: list[TreeEntry] = []
        deleted: list[str] = []
        pending: list[tuple[str, ObjectID | None, ObjectID | None]] = [
            ("", self._tree_id(old_commit), self._tree_id(new_commit))
        ]
        while pending:
            prefix, old_id, new_id = pending.pop()
            if old_id == new_id:
                continue
            old_items = {n: (m, s) for n, m, s in self._tree_items(old_id)} if old_id else {}
            new_items = {n: (m, s) for n, m, s in self._tree_items(new_id)} if new_id else {}
            for name in old_items.keys() | new_items.keys():
                path = prefix + name
                old = old_items.get(name)
                new = new_items.get(name)
                old_is_tree = old is not None and old[0] == _MODE_TREE
                new_is_tree = new is not None and new[0] == _MODE_TREE
                if old_is_tree or new_is_tree:
                    pending.append(
                        (
                            path + "/",
                            old[1] if old_is_tree and old else None,
                            new[1] if new_is_tree and new else None,
                        )
                    )
                if old is not None and not old_is_tree and (new is None or new_is_tree):
                    deleted.append(path)
                elif new is not None and not new_is_tree:
                    if old is None or old_is_tree:
                        added.append(self._entry(path, new[0], new[1]))
                    elif old != new:
                        modified.append(self._entry(path, new[0], new[1]))
        added.sort(key=lambda e: e.path)
        modified.sort(key=lambda e: e.path)
        deleted.sort()
        return TreeDiff(added=added, modified=modified, deleted=deleted)

    def entry_at(self, commit_sha: str, path: str) -> tuple[int, str] | None:
        """``(mode, sha)`` of ``path`` (a file, symlink, submodule or directory; "" is the
        root) in the commit's tree, or None when there is nothing at that path."""
        mode, sha = _MODE_TREE, self._tree_id(commit_sha)
        for name in [part for part in path.split("/") if part]:
            if mode != _MODE_TREE:
                return None
            found = next((item for item in self._tree_items(sha) if item[0] == name), None)
            if found is None:
                return None
            _, mode, sha = found
        return mode, sha.decode("ascii")

    def list_directory(self, commit_sha: str, path: str) -> list[tuple[str, bool, int, str]] | None:
        """``(name, is_directory, mode, sha)`` of a directory's entries at the commit,
        directories first, then by name; None when ``path`` is not a directory there."""
        entry = self.entry_at(commit_sha, path)
        if entry is None or entry[0] != _MODE_TREE:
            return None
        items = self._tree_items(ObjectID(entry[1].encode("ascii")))
        rows = [(name, mode == _MODE_TREE, mode, sha.decode("ascii")) for name, mode, sha in items]
        return sorted(rows, key=lambda row: (not row[1], row[0]))

    # -- internals ---------------------------------------------------------------------

    def _tree_id(self, commit_sha: str) -> ObjectID:
        commit = self._store[ObjectID(commit_sha.encode("ascii"))]
        if not isinstance(commit, Commit):
            raise ValueError(f"{commit_sha} is not a commit")
        return commit.tree

    def _tree_items(self, tree_id: ObjectID) -> list[tuple[str, int, ObjectID]]:
        tree = self._store[tree_id]
        if not isinstance(tree, Tree):
            raise ValueError(f"{tree_id.decode()} is not a tree")
        items = []
        for entry in tree.iteritems():
            name = entry.path.decode("utf-8", "backslashreplace")
            # A crafted tree can hold names git itself would refuse; skip them.
            if name in ("", ".", "..") or "/" in name or "\0" in name or name.lower() == ".git":
                logger.warning("git.tree.skipped_entry name=%r", name)
                continue
            items.append((name, entry.mode, entry.sha))
        return items

    def _entry(self, path: str, mode: int, sha: ObjectID) -> TreeEntry:
        if mode == MODE_GITLINK:
            return TreeEntry(path=path, mode=MODE_GITLINK, sha=sha.decode("ascii"), size=0)
        if mode != MODE_SYMLINK:
            # Normalise legacy modes such as 100664 to the two regular-file modes.
            mode = MODE_EXECUTABLE if mode & 0o111 else MODE_FILE
        return TreeEntry(path=path, mode=mode, sha=sha.decode("ascii"), size=self._blob_size(sha))

    def _blob_size(self, sha: ObjectID) -> int:
        binary = hex_to_sha(sha)
        for pack in self._packs:
            try:
                offset = pack.index.object_offset(binary)
            except KeyError:
                continue
            try:
                return _packed_object_size(pack.data._buffer(), offset)
            except Exception:  # fall back to inflating the object
                break
        else:
            self._packs = list(self._store.packs)
        return len(self._store.get_raw(sha)[1])


_MODE_TREE = MODE_TREE
_OFS_DELTA = 6
_REF_DELTA = 7


def _packed_object_size(buffer: bytes | mmap.mmap, offset: int) -> int:
    """Inflated size of the object at `offset` of a pack, read from its headers.

    A full object's header holds its size. A delta's header holds the delta's size;
    the target size is the second varint of the delta data, so only its first bytes
    are inflated.
    """
    byte = buffer[offset]
    type_num = (byte >> 4) & 0x07
    size = byte & 0x0F
    shift = 4
    pos = offset + 1
    while byte & 0x80:
        byte = buffer[pos]
        size |= (byte & 0x7F) << shift
        shift += 7
        pos += 1
    if type_num not in (_OFS_DELTA, _REF_DELTA):
        return size
    if type_num == _OFS_DELTA:
        while buffer[pos] & 0x80:
            pos += 1
        pos += 1
    else:
        pos += 20
    # A dynamic-Huffman block header can precede the first output byte by a few hundred
    # bytes; feed input until the two varints (at most 20 bytes) are out.
    inflater = zlib.decompressobj()
    head = b""
    end = min(len(buffer), pos + 16384)
    while len(head) < 20 and pos < end and not inflater.eof:
        head += inflater.decompress(bytes(buffer[pos : pos + 256]), 20 - len(head))
        pos += 256
        if inflater.unconsumed_tail:
            break  # enough output is available
    index = 0
    for _ in range(2):  # source size, then target size
        value, shift = 0, 0
        while True:
            byte = head[index]
            index += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
    return value


def list_tree(repo_dir: str | os.PathLike[str], commit_sha: str) -> list[TreeEntry]:
    """Every entry of a commit's tree; see `GitTreeReader.list_tree`."""
    with GitTreeReader(repo_dir) as reader:
        return reader.list_tree(commit_sha)


def read_blob(repo_dir: str | os.PathLike[str], sha: str) -> bytes:
    """One blob's content; prefer `GitTreeReader` when reading many."""
    with GitTreeReader(repo_dir) as reader:
        return reader.read_blob(sha)
