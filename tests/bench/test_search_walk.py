"""``bench/search_walk.py`` follows a hybrid search through the product's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.script_runs import ROOT, run_script


@pytest.mark.django_db
def test_the_walk_of_a_hybrid_search_names_its_files(bench_database: str, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    # Before there is a corpus: a walk over nothing is refused, not reported.
    empty = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "search_walk.py")],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert empty.returncode == 2 and "no indexed repository" in empty.stderr, empty.stderr
    run_script(
        "build_synthetic_corpus.py",
        *("--chunks", "200", "--real-vectors", "8", "--base-files", "6"),
        env=env,
    )
    query = "how is the request parsed"
    run_script("search_walk.py", "--query", query, "--json", str(tmp_path / "walk.json"), env=env)
    found = json.loads((tmp_path / "walk.json").read_text())[query]
    files = [step["file"] for step in found["order"]]
    # The request enters the search app at the executor; both lists and the fusion are on its path.
    assert next(f for f in files if f.startswith("search/")) == "search/executor.py"
    for part in ("search/retrieval/fulltext.py", "search/retrieval/vector.py",
                 "search/ranking/fusion.py", "search/retrieval/hydrate.py"):  # fmt: skip
        assert part in files, part
    assert found["files"] == len(files) and found["search_files"] <= found["files"]
    assert found["stays"] >= found["files"]
    # The vector list ran on a retrieval thread of its own, and that thread's files are counted.
    assert "search/retrieval/vector.py" in found["by_thread"]["retrieval"]
