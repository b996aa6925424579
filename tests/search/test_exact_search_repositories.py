"""Exact and regex search over three real indexed repositories holding the same files: pages
run through every repository in name order under every read plan, with ``git grep``'s lines.

The three repositories (``tests.search.exact_corpus.three_repositories``) are indexed once for
the module; ``test_exact_search.py`` searches one of them alone.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import Piece, SourceDoc, indexed_repository
from tests.search.exact_corpus import three_repositories
from tests.search.test_exact_search import CASES, READ_PLANS, all_pages, force_plan, git_grep

pytestmark = pytest.mark.django_db

__all__ = ["three_repositories"]  # the fixture

MANY_REPOSITORY_CASES = [CASES[i] for i in (0, 2, 8, 9, 10, 11, 12)]


@pytest.mark.parametrize("plan", READ_PLANS)
@pytest.mark.parametrize(("query", "flags", "pattern"), MANY_REPOSITORY_CASES)
def test_several_repositories_page_in_name_order_under_every_plan(
    three_repositories, client: Client, monkeypatch: pytest.MonkeyPatch, plan, query, flags, pattern
) -> None:  # type: ignore[no-untyped-def]
    """Candidates are probed a few repositories at a time (or the rest at once, or by windows
    when one holds too many): pages still run through every repository in name order, each
    with exactly ``git grep``'s lines, and the totals count all three."""
    force_plan(monkeypatch, plan)
    hits, pages = all_pages(client, {"query": query, "limit": 2})
    expected = []
    for name, (path, repository) in sorted(three_repositories.items()):
        commit = repository.last_indexed_commit
        expected += sorted((name, *found) for found in git_grep(path, commit, flags, pattern))
    lines = [
        (h["repo_name"], h["file_path"], m["line"], m["text"]) for h in hits for m in h["matches"]
    ]
    assert sorted(lines) == expected
    files = sorted({(name, file_path) for name, file_path, _, _ in expected})
    assert [(h["repo_name"], h["file_path"]) for h in hits] == files
    # True totals, or lower bounds said so (one-file windows can use up the count's 100 ms);
    # the last page has read to the end.
    for page in pages:
        exact = page["total"] == len(files) and page["match_total"] == len(expected)
        assert exact or page["total_is_lower_bound"]
        assert page["total"] <= len(files) and page["match_total"] <= len(expected)
    assert not pages[-1]["total_is_lower_bound"]


@pytest.mark.parametrize("plan", READ_PLANS)
def test_a_file_is_answered_under_its_own_repository_only(
    three_repositories, client: Client, monkeypatch: pytest.MonkeyPatch, plan
) -> None:  # type: ignore[no-untyped-def]
    """Two literals a file must both hold, in one repository of several: that repository's
    file, and no other repository's name on it. (A probe of one repository joined the patterns
    by a bare OR beside its own condition, which let every repository's chunks holding the
    second literal in, under the probed repository's name.)"""
    force_plan(monkeypatch, plan)
    doc = SourceDoc("only/here.py", [Piece("def f():\n    return 'needle_one needle_two'\n", "f")])
    indexed_repository("aaa/empty", [SourceDoc("other.py", [Piece("def g():\n    pass\n", "g")])])
    holder = indexed_repository("bbb/holder", [doc])
    hits, pages = all_pages(client, {"query": '"needle_one" "needle_two"', "limit": 2})
    found = [(h["repo_name"], h["file_path"], h["commit"]) for h in hits]
    assert found == [("bbb/holder", "only/here.py", holder.last_indexed_commit)]
    assert pages[0]["total"] == 1
