"""Reading trees and blobs straight from the object store (no checkout)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, Tree, sha_to_hex
from dulwich.repo import Repo

from indexing.git.tree import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_GITLINK,
    MODE_SYMLINK,
    GitTreeReader,
    _packed_object_size,
    list_tree,
    read_blob,
)
from tests.indexing.git_server import Symlink, commit_files, init_bare_repo


@pytest.fixture
def repo(tmp_path: Path):
    repository = init_bare_repo(str(tmp_path / "repo.git"))
    yield repository
    repository.close()


def commit_tree(repo: Repo, tree: Tree, parent: bytes | None = None) -> str:
    commit = Commit()
    commit.tree = tree.id
    commit.parents = [parent] if parent else []
    commit.author = commit.committer = b"T <t@example.com>"
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"m"
    repo.object_store.add_object(commit)
    return commit.id.decode()


def test_symlinks_are_reported_not_followed(repo, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read me")
    sha = commit_files(
        repo,
        {
            "src/main.py": "print('hi')\n",
            "escape": Symlink(str(secret)),
            "src/up": Symlink("../../.."),
        },
    ).decode()
    with GitTreeReader(repo.path) as reader:
        entries = {entry.path: entry for entry in reader.list_tree(sha)}
        assert entries["escape"].mode == MODE_SYMLINK
        assert entries["escape"].is_symlink
        assert entries["escape"].size == len(str(secret))
        # Reading the entry gives the link text, never the target's content.
        assert reader.read_blob(entries["escape"].sha) == str(secret).encode()
        assert entries["src/up"].mode == MODE_SYMLINK
        assert entries["src/main.py"].mode == MODE_FILE
        assert not entries["src/main.py"].is_symlink


def test_modes_submodules_and_sizes(repo):
    store = repo.object_store
    script, legacy = Blob.from_string(b"#!/bin/sh\necho hi\n"), Blob.from_string(b"x" * 1000)
    store.add_object(script)
    store.add_object(legacy)
    tree = Tree()
    tree.add(b"run.sh", 0o100755, script.id)
    tree.add(b"old.txt", 0o100664, legacy.id)  # a legacy mode from early git
    tree.add(b"vendor-lib", MODE_GITLINK, b"a" * 40)  # submodule: commit not in the store
    store.add_object(tree)
    sha = commit_tree(repo, tree)

    entries = {entry.path: entry for entry in list_tree(repo.path, sha)}
    assert entries["run.sh"].mode == MODE_EXECUTABLE
    assert entries["old.txt"].mode == MODE_FILE
    assert entries["old.txt"].size == 1000
    assert entries["vendor-lib"].is_submodule
    assert entries["vendor-lib"].size == 0
    assert read_blob(repo.path, entries["run.sh"].sha) == b"#!/bin/sh\necho hi\n"


def test_crafted_entry_names_are_skipped(repo):
    blob = Blob.from_string(b"evil")
    repo.object_store.add_object(blob)
    tree = Tree()
    for name in (b"..", b".git", b".GIT", b"a/b", b"ok.txt"):
        tree.add(name, 0o100644, blob.id)
    repo.object_store.add_object(tree)
    sha = commit_tree(repo, tree)
    assert [entry.path for entry in list_tree(repo.path, sha)] == ["ok.txt"]


def test_read_blob_refuses_non_blobs(repo):
    sha = commit_files(repo, {"a.txt": "a"}).decode()
    with GitTreeReader(repo.path) as reader, pytest.raises(ValueError, match="not a blob"):
        reader.read_blob(sha)


def test_diff_by_blob_sha(repo):
    old = commit_files(
        repo,
        {
            "keep.py": "same\n",
            "edit.py": "v1\n",
            "gone.py": "bye\n",
            "lib/deep/a.py": "a\n",
            "becomes_dir": "file\n",
            "tool.sh": "echo\n",
        },
    )
    store = repo.object_store
    new = commit_files(
        repo,
        {
            "keep.py": "same\n",
            "edit.py": "v2\n",
            "lib/deep/a.py": "a\n",
            "lib/deep/b.py": "b\n",
            "becomes_dir/inner.py": "x\n",
            "tool.sh": "echo\n",
        },
        parent=old,
    )
    # Make tool.sh executable in a third commit: a mode change counts as modified.
    new_commit = store[new]
    tree = store[new_commit.tree]
    _mode, tool_sha = tree[b"tool.sh"]
    tree.add(b"tool.sh", 0o100755, tool_sha)
    store.add_object(tree)
    newest = commit_tree(repo, tree, parent=new)

    with GitTreeReader(repo.path) as reader:
        diff = reader.diff(old.decode(), newest)
        unchanged = reader.diff(newest, newest)
    assert [e.path for e in diff.added] == ["becomes_dir/inner.py", "lib/deep/b.py"]
    assert [e.path for e in diff.modified] == ["edit.py", "tool.sh"]
    assert diff.deleted == ["becomes_dir", "gone.py"]
    assert diff.changed_paths == ["becomes_dir/inner.py", "edit.py", "lib/deep/b.py", "tool.sh"]
    assert {e.path: e.mode for e in diff.modified}["tool.sh"] == MODE_EXECUTABLE
    assert unchanged.changed_paths == []


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_sizes_from_pack_headers_match_content_for_deltified_blobs(repo):
    """After an aggressive repack most blobs are deltas; sizes must still be exact."""
    rng = random.Random(7)
    vocabulary = [f"{a}{b}" for a in ("get", "set", "load", "parse") for b in "xyzwvu"]
    base = " ".join(rng.choices(vocabulary, k=4000))
    parent = None
    commits = []
    for version in range(6):
        # Each version inserts new text: deltas carry literal data, compressed with
        # dynamic Huffman tables whose header comes before the first output byte.
        files = {
            f"f{n}.txt": base + " ".join(rng.choices(vocabulary, k=300 * (n + 1))) for n in range(5)
        }
        parent = commit_files(repo, files, parent=parent, message=f"v{version}")
        commits.append(parent.decode())
    subprocess.run(
        ["git", "-C", repo.path, "repack", "-a", "-d", "-f", "--depth=50", "--window=50", "-q"],
        check=True,
        env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": repo.path, "PATH": "/usr/bin:/bin"},
    )
    with GitTreeReader(repo.path) as reader:
        checked = 0
        for sha in commits:
            for entry in reader.list_tree(sha):
                assert entry.size == len(reader.read_blob(entry.sha)), entry.path
                checked += 1
    assert checked == 30

    # The header fast path itself (no fallback) on every object of the pack.
    [pack] = repo.object_store.packs
    deltas = 0
    for binary_sha, offset, _crc in pack.index.iterentries():
        _type_num, data = repo.object_store.get_raw(sha_to_hex(binary_sha))
        assert _packed_object_size(pack.data._buffer(), offset) == len(data)
        deltas += pack.data._buffer()[offset] >> 4 & 7 in (6, 7)
    assert deltas > 10
