"""``bench/postings_rss.py`` at a tiny size, so it cannot rot: on a 300-chunk synthetic corpus,
1 and 2 search processes answer every query, the second and later rounds read no list from the
database (the files written in the first are mapped), and each process's memory is reported.
The figures themselves mean nothing at this size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.script_runs import run_script


@pytest.mark.django_db
def test_postings_rss(bench_database: str, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    run_script(
        "build_synthetic_corpus.py",
        *("--chunks", "300", "--real-vectors", "16", "--base-files", "10"),
        env=env,
    )
    figures = tmp_path / "rss.json"
    run_script(
        "postings_rss.py", *("--workers", "1", "2", "--rounds", "2", "--json", str(figures)),
        env=env,
    )  # fmt: skip
    runs = json.loads(figures.read_text())["runs"]
    assert [run["processes"] for run in runs] == [1, 2]
    for run in runs:
        assert run["fallbacks"] == [] and run["lists_read_in_last_round"] == 0
        assert run["files_bytes"] > 0  # the lists were written once, then mapped
        assert len(run["warm"]) == run["processes"]
        assert all(row["rss"] > 0 and row["pss"] > 0 for row in run["warm"])
