"""Exact and regex totals equal ``git grep -c``'s on a repository of a few thousand files, on the
first page and without a flag (issue 29 item 2); past the files an exact count may read, the
totals are marked as lower bounds (files and lines alike). The repository is generated here,
committed with dulwich and indexed by the real pipeline (full text only) once for the module."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from indexing.models import Repository
from search.exact import engine
from tests.indexing.real_run import fetch_and_index, mirror
from tests.search.test_exact_search import post
from tests.shared_rows import rows_fixture, shared_rows

pytestmark = pytest.mark.django_db

FILE_COUNT = 3000


def _file(n: int) -> str:
    lines = [f"# generated module {n}"]
    lines += [f"value_{n}_{k} = compute({k})" for k in range(n % 5)]
    lines += ["return value"] * (1 + n % 3)
    if n % 11 == 0:
        lines.append("raise RetryError('max_retries exceeded')")
    if n % 4 == 0:
        lines.append("pool_maxsize = 10")
    return "\n".join(lines) + "\n"


FILES = {f"pkg{n % 30:02d}/mod_{n:04d}.txt": _file(n) for n in range(FILE_COUNT)}


@rows_fixture()
def big(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[tuple[Path, Repository]]:
    path = mirror(tmp_path_factory.mktemp("totals"), FILES)

    def build() -> tuple[Path, Repository]:
        job = fetch_and_index(path, "acme/big")
        repository = Repository.objects.get(pk=job.repository_id)
        assert repository.file_count == FILE_COUNT
        return path, repository

    with shared_rows(django_db_blocker, build, "big") as found:
        yield found


def git_grep_counts(path: Path, commit: str, flags: list[str], pattern: str) -> dict[str, int]:
    done = subprocess.run(
        ["git", f"--git-dir={path}", "grep", "-c", "-I", *flags, "-e", pattern, commit, "--"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    counts = {}
    for line in done.stdout.splitlines():
        _, file_path, count = line.rsplit(":", 2)
        counts[file_path] = int(count)
    return counts


CASES = [
    ('"return"', ["-F", "-i"], "return"),
    ('"max_retries"', ["-F", "-i"], "max_retries"),
    ('"pool_maxsize"', ["-F", "-i"], "pool_maxsize"),
    ("/value_[0-9]+_3/", ["-E", "-i"], "value_[0-9]+_3"),
    ('"compute(" OR "raise"', ["-F", "-i", "-e", "raise"], "compute("),
]


@pytest.mark.parametrize(("query", "flags", "pattern"), CASES)
def test_totals_equal_git_grep_on_a_repository_of_a_few_thousand_files(
    big: tuple[Path, Repository], client: Client, query: str, flags: list[str], pattern: str
) -> None:
    path, repository = big
    counts = git_grep_counts(path, repository.last_indexed_commit, flags, pattern)
    assert counts, pattern
    status, body = post(client, {"query": query, "limit": 10})
    assert status == 200, body
    assert (body["total"], body["match_total"]) == (len(counts), sum(counts.values()))
    assert body["total_is_lower_bound"] is False
    assert body["match_total_is_lower_bound"] is False
    assert body["timed_out"] is False


def test_past_the_exact_count_budget_totals_are_marked_lower_bounds(
    big: tuple[Path, Repository], client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope larger than the files an exact count may read (as at a million chunks) gets the
    quick count: fewer than git grep finds, and said to be a minimum."""
    path, repository = big
    monkeypatch.setattr(engine, "EXACT_COUNT_MAX_FILES", FILE_COUNT - 1)
    monkeypatch.setattr(engine, "QUICK_COUNT_FILES", 500)
    counts = git_grep_counts(path, repository.last_indexed_commit, ["-F", "-i"], "return")
    status, body = post(client, {"query": '"return"', "limit": 10})
    assert status == 200, body
    assert body["total_is_lower_bound"] is True and body["match_total_is_lower_bound"] is True
    assert body["total"] < len(counts) and body["match_total"] < sum(counts.values())
    assert body["next_cursor"]
