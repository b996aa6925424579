"""Where the suite's time goes, by tier: printed at the end of every run (``make test`` too),
next to ``--durations``' slowest tests.

A test's tier is what it needs to run, the costliest first: a real model server
(``real_model``), a browser (the ``browser`` fixture), a real Celery worker or a stack of its
own (``e2e``), a benchmark script (tests/bench), a database whose rows are committed
(``transactional_db``, ``live_server``), a database in a rolled-back transaction, or nothing.
Its time is setup + call + teardown, so a module-scoped fixture counts in the test that
first asked for it. Under pytest-xdist the workers collect and the controller prints: the tier
travels with each report (its ``user_properties``), and the times are summed over the workers.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

TIERS = (
    "real model server",
    "browser",
    "end to end (worker or own stack)",
    "benchmark scripts",
    "committed database",
    "database (rolled back)",
    "no database",
)
_tier_of: dict[str, str] = {}
_seconds: dict[str, float] = defaultdict(float)
_tests: dict[str, set[str]] = defaultdict(set)


def tier(item: pytest.Item) -> str:
    names = set(getattr(item, "fixturenames", ()))
    marker = item.get_closest_marker("django_db")
    if item.get_closest_marker("real_model"):
        return TIERS[0]
    if "browser" in names:
        return TIERS[1]
    if item.get_closest_marker("e2e"):
        return TIERS[2]
    if item.path.parent.name == "bench":
        return TIERS[3]
    if names & {"transactional_db", "live_server"} or (marker and marker.kwargs.get("transaction")):
        return TIERS[4]
    if marker or "db" in names:
        return TIERS[5]
    return TIERS[6]


def record_tiers(items: list[pytest.Item]) -> None:
    for item in items:
        _tier_of[item.nodeid] = tier(item)
        item.user_properties.append(("tier", _tier_of[item.nodeid]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    name = _tier_of.get(report.nodeid)
    for key, value in report.user_properties:  # from an xdist worker, which collected the item
        if key == "tier":
            name = value
    if name is not None:
        _seconds[name] += report.duration
        _tests[name].add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    total = sum(_seconds.values())
    if not total:
        return
    terminalreporter.write_sep("=", "time by tier (setup + call + teardown)")
    for name in TIERS:
        if name in _seconds:
            seconds, count = _seconds[name], len(_tests[name])
            terminalreporter.write_line(
                f"{seconds:8.1f} s  {100 * seconds / total:5.1f} %  {count:5d} tests  {name}"
            )
    count = sum(len(tests) for tests in _tests.values())
    terminalreporter.write_line(f"{total:8.1f} s  100.0 %  {count:5d} tests  in all")
