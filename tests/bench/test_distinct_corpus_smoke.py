"""build_distinct_corpus.py at a tiny size: it indexes, stops when its time is up, and resumes.

A module of its own: the script adds repositories to its database, which the other smoke
runs' module database must not see.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests.bench.script_runs import run_script


def database_counts(url: str) -> dict[str, int]:
    """Repositories, chunks and HNSW indexes in the script's database."""
    with psycopg.connect(url) as connection:
        row = connection.execute(
            "SELECT (SELECT count(*) FROM indexing_repository), (SELECT count(*) FROM"
            " indexing_chunk), (SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%')"
        ).fetchone()
    assert row is not None
    return dict(zip(("repositories", "chunks", "hnsw_indexes"), row, strict=True))


@pytest.mark.timeout(600)
def test_distinct_corpus_stops_on_time_and_resumes(
    bench_database: str, source_tree: Path, tmp_path: Path
) -> None:
    corpora = tmp_path / "corpora"
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(corpora)}
    package = str(source_tree / "tinypkg-1.0")

    # No time to embed: indexed for full text, nothing embedded, no index built yet.
    output = run_script("build_distinct_corpus.py", "--packages", package, "--hours", "0", env=env)
    manifest = json.loads((corpora / "distinct.json").read_text())
    assert manifest["packages"]["tinypkg"]["chunks"] == 4, output[-3000:]
    assert [(run["vectors"], run["finished"]) for run in manifest["embed_runs"]] == [(0, False)]
    assert "distinct_vectors" not in manifest
    assert database_counts(bench_database) == {"repositories": 1, "chunks": 4, "hnsw_indexes": 0}

    # Run again: the repository is kept, the rest is embedded and the index built once.
    output = run_script("build_distinct_corpus.py", "--packages", package, env=env)
    manifest = json.loads((corpora / "distinct.json").read_text())
    runs = [(run["vectors"], run["finished"]) for run in manifest["embed_runs"]]
    assert runs == [(0, False), (4, True)], output[-3000:]
    assert (manifest["chunks"], manifest["distinct_vectors"]) == (4, 4)
    assert manifest["chunks_by_language"] == {"python": 3, "markdown": 1}
    assert database_counts(bench_database) == {"repositories": 1, "chunks": 4, "hnsw_indexes": 1}

    # The measuring scripts read that corpus from the same BENCH_CORPORA_DIR.
    run_script(
        "search_latency.py", *("--corpus", "distinct", "--repeats", "1", "--recall"),
        *("--json", str(tmp_path / "latency.json"), "--plans", str(tmp_path / "plans.txt")),
        env=env,
    )  # fmt: skip
    latency = json.loads((tmp_path / "latency.json").read_text())
    assert latency["distinct_manifest"]["distinct_vectors"] == 4
    for mode in ("fulltext", "vector", "hybrid", "hybrid+cross-encoder"):
        timed = latency["distinct"][mode]["all"]
        assert timed["runs"] > 0 and 0 < timed["p50"] <= timed["p95"], mode
    # Only the default mode times the cross-encoder (on the prose queries).
    assert "cross_encoder" in latency["distinct"]["hybrid+cross-encoder"]["stage_ms_p50"]
    assert "cross_encoder" not in latency["distinct"]["hybrid"]["stage_ms_p50"]
    # Four vectors: the search scans them all, so it finds exactly what an exact scan finds.
    assert latency["distinct"]["vector_recall"]["recall_at_10_mean"] == 1.0
    run_script(
        "vector_recall.py", *("--scopes", "all", "--ef-search", "40", "--extra-queries", "2"),
        *("--json", str(tmp_path / "recall.json")), env=env,
    )  # fmt: skip
    measured = json.loads((tmp_path / "recall.json").read_text())["all"]["ef_search=40"]
    assert measured["distinct_vector_recall_at_10_mean"] == measured["recall_at_10_mean"] == 1.0
