"""make up's restart policy (reposearch/supervisor.py) on real child processes: the delays it
announces, the count that starts over after a healthy run, the message when it gives up; and
its ready probe, which the rounds never wait for."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from reposearch.supervisor import Backoff, Child, GaveUp, Probe, check


def test_the_delay_doubles_from_one_second_up_to_a_minute() -> None:
    backoff = Backoff(give_up_after=100)
    assert [backoff.after_crash(ran_for=0.5) for _ in range(9)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_a_crash_after_a_healthy_minute_starts_the_count_over() -> None:
    backoff = Backoff()
    assert [backoff.after_crash(ran_for=2) for _ in range(4)] == [1, 2, 4, 8]
    assert backoff.after_crash(ran_for=61) == 1  # not the fifth crash in a row: no giving up
    assert backoff.after_crash(ran_for=2) == 2


def test_a_child_that_keeps_crashing_is_restarted_then_given_up_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    command = [sys.executable, "-c", f"open({str(runs)!r}, 'a').write('x'); raise SystemExit(3)"]
    child = Child("demo", command, {}, tmp_path)
    watched = child.watched()
    watched.backoff = Backoff(first=0.05)
    watched.begin()
    deadline = time.monotonic() + 60
    with pytest.raises(GaveUp, match=r"demo exited \(code 3\); it crashed 5 times in a row"):
        while time.monotonic() < deadline:
            check([watched])
            time.sleep(0.02)
    out = capsys.readouterr().out
    assert out.count("demo exited (code 3); restarting it in") == 4
    assert "restarting it in 0.05 s" in out and "restarting it in 0.4 s" in out
    assert runs.read_text() == "x" * 5  # started five times in all
    assert (tmp_path / "demo.pid").read_text() == str(child.process.pid)  # type: ignore[union-attr]


def test_a_probe_that_gets_no_answer_never_holds_up_the_rounds() -> None:
    # make up asks /api/health this way between rounds; a port held by something that accepts
    # and never answers used to hold each round (and a crashed process's restart) for 5 s.
    answer = threading.Event()
    asked: list[int] = []

    def ask() -> int:
        asked.append(1)
        answer.wait(60)
        return 200

    probe = Probe(ask)
    try:
        assert [probe.poll() for _ in range(3)] == [None, None, None]  # not waited for
        assert len(asked) == 1  # and not asked again while the first ask is out
        answer.set()
        deadline = time.monotonic() + 30
        while (health := probe.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert health == 200
    finally:
        probe.close()
