"""Fetching one branch over smart HTTP / git:// from in-process dulwich servers."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from dulwich.config import StackedConfig
from dulwich.repo import Repo
from dulwich.server import DictBackend, TCPGitServer

from indexing.git.errors import (
    BranchNotFound,
    GitFetchError,
    HostRefused,
    RepositoryNotFound,
    RepositoryTooLarge,
)
from indexing.git.tree import GitTreeReader
from tests.indexing.git_fetch_support import MB, fetch, fetch_again, files_under
from tests.indexing.git_server import (
    GitHttpServer,
    commit_files,
    init_bare_repo,
)


def test_fetch_default_branch_is_shallow_and_single_branch(server, source, tmp_path):
    target = tmp_path / "repos" / "r1"
    result = fetch(server.url("org/repo.git"), target)

    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
    assert result.branch == "main"
    assert result.url == server.url("org/repo.git")
    assert result.bytes_received > 0
    with Repo(str(target)) as repo:
        assert repo.bare
        assert repo.refs.get_symrefs()[b"HEAD"] == b"refs/heads/main"
        assert set(repo.refs.as_dict(b"refs/heads")) == {b"main"}
        assert repo.get_shallow() == {result.commit_sha.encode()}
        # depth 1: the parent commit was not transferred
        parent = repo[result.commit_sha.encode()].parents[0]
        assert parent not in repo.object_store
        # no remote configured: the URL is not stored in the repository
        assert b"remote" not in Path(target, "config").read_bytes()
    with GitTreeReader(target) as reader:
        paths = [entry.path for entry in reader.list_tree(result.commit_sha)]
    assert paths == ["README.md", "src/app.py"]


def test_default_branch_follows_remote_head(tmp_path):
    repo = init_bare_repo(str(tmp_path / "trunk.git"), default_branch="trunk")
    sha = commit_files(repo, {"a.txt": "a"}, branch="trunk")
    commit_files(repo, {"b.txt": "b"}, branch="main")
    with GitHttpServer({"o/trunk.git": repo}) as running:
        result = fetch(running.url("o/trunk.git"), tmp_path / "out")
    assert (result.branch, result.commit_sha) == ("trunk", sha.decode())


def test_fetch_named_branch(server, source, tmp_path):
    result = fetch(server.url("org/repo.git"), tmp_path / "out", branch="dev")
    assert result.branch == "dev"
    assert result.commit_sha == source.refs[b"refs/heads/dev"].decode()
    with Repo(str(tmp_path / "out")) as repo:
        assert repo.refs.get_symrefs()[b"HEAD"] == b"refs/heads/dev"


@pytest.mark.parametrize("branch", ["nope", "release/9.9"])
def test_missing_branch_is_a_user_error_and_leaves_nothing(server, tmp_path, branch):
    target = tmp_path / "out"
    with pytest.raises(BranchNotFound, match=f"branch '{branch}' not found") as info:
        fetch(server.url("org/repo.git"), target, branch=branch)
    assert not info.value.transient
    assert not target.exists()


def test_invalid_branch_name_refused(server, tmp_path):
    with pytest.raises(BranchNotFound, match="not valid"):
        fetch(server.url("org/repo.git"), tmp_path / "out", branch="../../etc")


def test_unknown_repository_is_404(server, tmp_path):
    target = tmp_path / "out"
    with pytest.raises(RepositoryNotFound, match=r"repository not found \(HTTP 404\)") as info:
        fetch(server.url("org/missing.git"), target)
    assert not info.value.transient
    assert not target.exists()


def test_incremental_fetch_keeps_old_tree_and_reports_changes(server, source, tmp_path):
    target = tmp_path / "out"
    first = fetch(server.url("org/repo.git"), target)
    new_sha = commit_files(
        source,
        {"src/app.py": "def main():\n    return 2\n", "docs/guide.md": "guide\n"},
        parent=source.refs[b"refs/heads/main"],
        message="third",
    )
    update = fetch_again(target, server.url("org/repo.git"))
    assert update.previous_commit_sha == first.commit_sha
    assert update.commit_sha == new_sha.decode()
    assert update.changed
    with GitTreeReader(target) as reader:
        assert [e.path for e in reader.list_tree(first.commit_sha)] == ["README.md", "src/app.py"]
        diff = reader.diff(first.commit_sha, update.commit_sha)
        assert [e.path for e in diff.added] == ["docs/guide.md"]
        assert [e.path for e in diff.modified] == ["src/app.py"]
        assert diff.deleted == ["README.md"]
        assert reader.read_blob(diff.modified[0].sha) == b"def main():\n    return 2\n"

    again = fetch_again(target, server.url("org/repo.git"))
    assert not again.changed
    assert again.bytes_received == 0


def test_failed_update_leaves_the_repository_usable(server, source, tmp_path):
    target = tmp_path / "out"
    first = fetch(server.url("org/repo.git"), target)
    commit_files(source, {"huge.bin": os.urandom(2 * MB)}, parent=source.refs[b"refs/heads/main"])
    with pytest.raises(RepositoryTooLarge):
        fetch_again(target, server.url("org/repo.git"))
    with Repo(str(target)) as clone:
        assert clone.head().decode() == first.commit_sha
    with GitTreeReader(target) as reader:
        assert len(reader.list_tree(first.commit_sha)) == 2
    leftovers = [p for p in files_under(target / "objects") if "tmp" in p.name]
    assert leftovers == []


def test_user_and_system_git_config_are_ignored(server, tmp_path, monkeypatch):
    """A hostile ~/.gitconfig (url rewrite, proxy) changes nothing; it is never read."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        '[url "http://127.0.0.1:9/"]\n\tinsteadOf = http://\n[http]\n\tproxy = http://127.0.0.1:9\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")

    def refuse(*args, **kwargs):
        raise AssertionError("global git configuration was read")

    monkeypatch.setattr(StackedConfig, "default_backends", classmethod(refuse))
    result = fetch(server.url("org/repo.git"), tmp_path / "out")
    assert result.branch == "main"


def test_fetch_over_git_protocol(source, tmp_path):
    backend = DictBackend({"/org/repo.git": source})
    daemon = TCPGitServer(backend, "127.0.0.1", 0)
    thread = threading.Thread(target=daemon.serve_forever, daemon=True)
    thread.start()
    try:
        port = daemon.server_address[1]
        result = fetch(f"git://127.0.0.1:{port}/org/repo.git", tmp_path / "out", branch="dev")
        assert result.commit_sha == source.refs[b"refs/heads/dev"].decode()
        with pytest.raises(GitFetchError):
            fetch(f"git://127.0.0.1:{port}/org/missing.git", tmp_path / "missing")
        assert not (tmp_path / "missing").exists()
    finally:
        daemon.shutdown()
        daemon.server_close()


def test_local_mirror_needs_permission(source, tmp_path):
    with pytest.raises(HostRefused, match="REPO_SEARCH_ALLOW_LOCAL_PATHS"):
        fetch(source.path, tmp_path / "refused")
    result = fetch(source.path, tmp_path / "out", allow_local_paths=True)
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
    assert result.url.startswith("file://")


def test_update_of_a_missing_repository_is_a_clear_error(server, tmp_path):
    with pytest.raises(GitFetchError, match="no repository at"):
        fetch_again(tmp_path / "never-fetched", server.url("org/repo.git"))
