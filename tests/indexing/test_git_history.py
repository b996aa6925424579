"""History and blame from a clone (``indexing.git.history``) equal real ``git log`` and ``git
blame`` on the same clone, fetched as indexing fetches (depth 1, and a full clone); past their
bounds they stop and say why."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from indexing.git.history import blame_file, file_history
from tests.indexing.git_history_support import PATH, build_source, clone, git_blame, git_log


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_source(tmp_path_factory.mktemp("history"))


@pytest.fixture(scope="module")
def full(source: Path) -> tuple[Path, str]:
    target = source.parent / "full.git"
    return target, clone(source, target, depth=None)


@pytest.fixture(scope="module")
def shallow(source: Path) -> tuple[Path, str]:
    target = source.parent / "shallow.git"
    return target, clone(source, target, depth=1)


def test_history_equals_git_log_on_a_full_clone(full: tuple[Path, str]) -> None:
    directory, commit = full
    expected = git_log(directory, commit)
    assert len(expected) >= 6  # several commits touched the file, a merge and a branch's among them
    history = file_history(directory, commit, PATH)
    assert [c.sha for c in history.commits] == expected
    assert not history.stopped and not history.shallow_end
    newest = history.commits[0]
    assert newest.author == "Ada Lovelace" and newest.email == "ada@example.com"
    assert history.commits[-1].summary == "Add core"
    # From an older commit, and for a directory and another file, too.
    older = expected[2]
    assert [c.sha for c in file_history(directory, older, PATH).commits] == git_log(
        directory, older
    )
    for path in ("src", "README.md"):
        found = [c.sha for c in file_history(directory, commit, path).commits]
        assert found == git_log(directory, commit, path), path


def test_blame_equals_git_blame_on_a_full_clone(full: tuple[Path, str]) -> None:
    directory, commit = full
    expected = git_blame(directory, commit)
    blame = blame_file(directory, commit, PATH)
    assert [line.commit.sha for line in blame.lines] == expected
    # Lines from several commits, the branch's among them (the merge itself wrote none).
    summaries = {line.commit.summary for line in blame.lines}
    assert "Edit core on a branch" in summaries and len(summaries) >= 4
    assert not any(s.startswith("Merge") for s in summaries)
    assert not any(line.boundary for line in blame.lines)
    assert not blame.stopped and not blame.shallow_end
    text = (Path(directory).parent / "source" / PATH).read_text().splitlines()
    assert [line.text for line in blame.lines] == text
    for older in git_log(directory, commit)[1:3]:
        assert [line.commit.sha for line in blame_file(directory, older, PATH).lines] == (
            git_blame(directory, older)
        )


def test_a_shallow_clone_says_its_history_ends_at_the_boundary(
    shallow: tuple[Path, str],
) -> None:
    directory, commit = shallow
    history = file_history(directory, commit, PATH)
    assert [c.sha for c in history.commits] == git_log(directory, commit) == [commit]
    assert history.shallow_end and not history.stopped
    blame = blame_file(directory, commit, PATH)
    assert [line.commit.sha for line in blame.lines] == git_blame(directory, commit)
    assert blame.shallow_end and all(line.boundary for line in blame.lines)


def test_history_past_its_bounds_stops_and_says_why(full: tuple[Path, str]) -> None:
    directory, commit = full
    expected = git_log(directory, commit)
    history = file_history(directory, commit, PATH, max_commits=2)
    assert [c.sha for c in history.commits] == expected[:2]
    assert history.stopped == "count" and not history.shallow_end
    ticks = itertools.count(0.0, 1.0)  # every look at the clock is a second later
    history = file_history(directory, commit, PATH, max_seconds=2.5, clock=lambda: next(ticks))
    assert history.stopped == "time"
    assert [c.sha for c in history.commits] == expected[: len(history.commits)]
    assert len(history.commits) < len(expected)


def test_blame_past_its_bounds_stops_and_marks_what_it_could_not_place(
    full: tuple[Path, str],
) -> None:
    directory, commit = full
    expected = git_blame(directory, commit)
    # The merge, "Remove two lines" and the branch's edit: line 3 (the branch's) is placed.
    blame = blame_file(directory, commit, PATH, max_commits=3)
    assert blame.stopped == "count" and blame.revisions == 3 and not blame.shallow_end
    boundary = [line for line in blame.lines if line.boundary]
    assert boundary and len(boundary) < len(blame.lines)
    for line, owner in zip(blame.lines, expected, strict=True):
        if not line.boundary:  # placed lines are placed exactly; the rest are at least this old
            assert line.commit.sha == owner
    ticks = itertools.count(0.0, 1.0)
    blame = blame_file(directory, commit, PATH, max_seconds=1.5, clock=lambda: next(ticks))
    assert blame.stopped == "time" and any(line.boundary for line in blame.lines)
    assert len(blame.lines) == len(expected)
    assert blame_file(directory, commit, PATH, max_bytes=100).stopped == "size"
    assert blame_file(directory, commit, PATH, max_lines=3).stopped == "size"
    assert blame_file(directory, commit, PATH, max_lines=3).lines == []


def test_a_binary_file_is_not_blamed(tmp_path: Path) -> None:
    from tests.indexing.git_server import commit_files, init_bare_repo

    repo = init_bare_repo(str(tmp_path / "bin.git"))
    commit = commit_files(repo, {"logo.png": b"\x89PNG\x00\x01\n\x02"}).decode()
    blame = blame_file(tmp_path / "bin.git", commit, "logo.png")
    assert blame.stopped == "binary" and blame.lines == []
