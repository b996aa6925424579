"""Links to the file on the repository's host at the indexed commit, with the line range."""

from __future__ import annotations

import pytest

from indexing.upstream_urls import upstream_file_url, upstream_history_url

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("clone_url", "expected"),
    [
        (
            "https://github.com/pallets/flask.git",
            f"https://github.com/pallets/flask/blob/{SHA}/src/app.py#L10-L20",
        ),
        (
            "https://gitlab.com/group/sub/project.git",
            f"https://gitlab.com/group/sub/project/-/blob/{SHA}/src/app.py#L10-20",
        ),
        (
            "https://codeberg.org/owner/repo",
            f"https://codeberg.org/owner/repo/src/commit/{SHA}/src/app.py#L10-L20",
        ),
        (
            "https://bitbucket.org/team/repo.git",
            f"https://bitbucket.org/team/repo/src/{SHA}/src/app.py#lines-10:20",
        ),
        (
            "git@github.com:pallets/flask.git",
            f"https://github.com/pallets/flask/blob/{SHA}/src/app.py#L10-L20",
        ),
        (
            "https://user:secret@gitlab.example.org/team/repo.git",
            f"https://gitlab.example.org/team/repo/-/blob/{SHA}/src/app.py#L10-20",
        ),
        ("https://git.example.org/team/repo.git", None),  # an unknown host: no guess
        ("http://127.0.0.1:8000/team/demo.git", None),
    ],
)
def test_known_hosts_get_a_link_at_the_commit(clone_url: str, expected: str | None) -> None:
    assert upstream_file_url(clone_url, SHA, "src/app.py", 10, 20) == expected


def test_self_hosted_gitlab_and_single_lines() -> None:
    url = upstream_file_url("https://gitlab.acme.dev/a/b.git", SHA, "dir/my file.py", 5, 5)
    assert url == f"https://gitlab.acme.dev/a/b/-/blob/{SHA}/dir/my%20file.py#L5"


def test_credentials_never_reach_the_link() -> None:
    url = upstream_file_url("https://token:x-oauth@github.com/o/r.git", SHA, "a.py", 1, 2)
    assert url is not None and "token" not in url and "x-oauth" not in url


def test_no_link_without_commit_or_path() -> None:
    assert upstream_file_url("https://github.com/o/r", "", "a.py", 1, 2) is None
    assert upstream_file_url("https://github.com/o/r", SHA, "", 1, 2) is None


@pytest.mark.parametrize(
    ("clone_url", "expected"),
    [
        ("https://github.com/o/r.git", f"https://github.com/o/r/commits/{SHA}/src/a%20b.py"),
        ("git@gitlab.com:g/s/r.git", f"https://gitlab.com/g/s/r/-/commits/{SHA}/src/a%20b.py"),
        ("https://codeberg.org/o/r", f"https://codeberg.org/o/r/commits/commit/{SHA}/src/a%20b.py"),
        ("https://bitbucket.org/o/r", f"https://bitbucket.org/o/r/history-node/{SHA}/src/a%20b.py"),
        ("https://git.example.com/o/r.git", None),
    ],
)
def test_a_files_history_upstream(clone_url: str, expected: str | None) -> None:
    assert upstream_history_url(clone_url, SHA, "src/a b.py") == expected
