"""The repository file's ``branches:``: an entry's branch list is added with it, changed by an
edit of the file (the plan shows it), and a bad one is refused with its line, nothing applied."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from indexing.models import IndexedBranch, Repository

pytestmark = pytest.mark.django_db

A = "http://127.0.0.1:9/team/alpha.git"


def sync(path: Path) -> list[str]:
    out = StringIO()
    call_command("sync_repos", str(path), stdout=out)
    return out.getvalue().splitlines()


def test_branches_are_added_updated_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "repos.yaml"
    path.write_text(
        f"repositories:\n  - url: {A}\n    branch: main\n    branches: [dev, release/*]\n"
    )
    assert sync(path)[0].startswith("add")
    alpha = Repository.objects.get(url=A)
    assert alpha.branch_specs == ["dev", "release/*"]
    # The named branch is listed at once (indexed after main's first index); globs then.
    assert list(IndexedBranch.objects.values_list("name", "pending")) == [("dev", True)]

    path.write_text(f"repositories:\n  - url: {A}\n    branch: main\n    branches: [dev, qa]\n")
    lines = sync(path)
    assert (
        lines[0].startswith("update")
        and "branches ['dev', 'release/*'] -> ['dev', 'qa']" in (lines[0])
    )
    assert sorted(IndexedBranch.objects.values_list("name", flat=True)) == ["dev", "qa"]

    path.write_text(
        f"repositories:\n  - url: {A}\n    branch: main\n    branches: [dev, 'bad name']\n"
    )
    with pytest.raises(CommandError) as refused:
        sync(path)
    assert f"{path}:4: 'bad name' is not a valid branch name or glob" in str(refused.value)
    assert sorted(IndexedBranch.objects.values_list("name", flat=True)) == ["dev", "qa"]
