"""The exact-search reader's time budget, with a clock the test moves: no repository probe
starts that would end past the budget, and a page that stops goes on from where it stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from search.exact.candidates import CandidateScope, PatternCondition
from search.exact.engine import ExactRequest, run_exact
from search.exact.pattern_logic import Term
from search.exact.patterns import compile_term
from search.exact.reader import CandidateReader
from tests.indexing.real_run import index, mirror
from tests.search.exact_corpus import FILES, three_repositories
from tests.search.test_exact_search import force_plan

pytestmark = pytest.mark.django_db

__all__ = ["three_repositories"]  # the fixture, shared with test_exact_search_repositories


class ManualClock:
    """Time that moves only by ``probe_seconds`` during each repository probe."""

    def __init__(self) -> None:
        self.now, self.probe_seconds = 100.0, 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """Read by repository, one a probe; each probe "takes" ``clock.probe_seconds``."""
    force_plan(monkeypatch, "by repository, one a probe, never the rest at once")
    manual = ManualClock()
    real_probe = CandidateReader._probe

    def timed_probe(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        found = real_probe(self, *args, **kwargs)
        manual.now += manual.probe_seconds
        return found

    monkeypatch.setattr(CandidateReader, "_probe", timed_probe)
    return manual


def test_no_repository_probe_starts_that_would_end_past_the_budget(
    three_repositories, clock: ManualClock
) -> None:  # type: ignore[no-untyped-def]
    """Reading by repository, the reader times its probes: once the time left is less than one
    more repository's probe took, it stops *before* that probe (``out_of_time``) instead of
    running past the budget, and the next call goes on from where it stopped -- so the files
    still come out once each, in name order."""
    clock.probe_seconds = 0.5
    repo_ids = [repository.pk for _path, repository in three_repositories.values()]
    reader = CandidateReader(
        CandidateScope(repo_ids=repo_ids), [PatternCondition(["follow_redirects"])], clock=clock
    )
    seen: list[tuple[str, str]] = []

    def read(seconds_left: float) -> tuple[bool, int]:
        with CaptureQueriesContext(connection) as statements:
            batch = reader.next_batch(10, 1000, stop_at=clock.now + seconds_left)
        seen.extend((f.repo_name, f.path) for f in batch.files)
        probes = sum("CROSS JOIN LATERAL" in q["sql"] for q in statements.captured_queries)
        assert not (batch.out_of_time and batch.files)
        assert not (batch.out_of_time and batch.exhausted)
        return batch.out_of_time, probes

    assert read(10.0) == (False, 1)  # the first repository, timed: 0.5 s for one
    assert read(0.4) == (True, 0)  # 0.4 s left < 0.5 s a probe: none started
    assert read(0.4) == (True, 0)  # still nothing started, nothing lost
    assert read(0.6) == (False, 1)  # room for one repository: exactly one probed
    assert read(10.0) == (False, 1)  # the last one
    expected = sorted(
        (name, path)
        for name in three_repositories
        for path, text in FILES.items()
        if "follow_redirects" in str(text)
    )
    assert seen == expected


def test_a_page_out_of_time_among_repositories_without_matches_goes_on_from_the_next(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Each repository's probe outlasts what is left of the page's budget, and the first ones
    hold no match: every page still ends with a cursor that goes on from the next repository,
    so following them reaches the match (before, such a page had no ``next_cursor`` at all)."""
    plain = {"src/plain.py": "def plain():\n    return 1\n"}
    marked = {"src/marked.py": "MARKER_WORD_QX = 1\n", **plain}
    repo_ids = []
    for number, (name, files) in enumerate(
        [("aaa/first", plain), ("bbb/second", plain), ("ccc/third", marked)]
    ):
        (tmp_path / str(number)).mkdir()
        repo_ids.append(index(mirror(tmp_path / str(number), files), name).pk)
    clock.probe_seconds = 0.6
    term = Term("literal", "marker_word_qx", 0)
    cursor, pages = None, []
    for _ in range(6):
        result = run_exact(
            ExactRequest(
                matchers=[compile_term(term, False)],
                conditions=[PatternCondition([term.text])],
                scope=CandidateScope(repo_ids=repo_ids),
                fingerprint="no-progress",
                limit=10,
                cursor=cursor,
                budget_ms=1000,  # one probe (0.6 s) fits, a second does not
                clock=clock,
            )
        )
        pages.append(([(h.file.repo_name, h.file.path) for h in result.hits], result.timed_out))
        if not result.next_cursor:
            break
        assert result.timed_out and result.total_is_lower_bound
        cursor = result.next_cursor
    assert pages == [([], True), ([], True), ([("ccc/third", "src/marked.py")], False)]
