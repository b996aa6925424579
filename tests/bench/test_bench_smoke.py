"""Every benchmark script runs at a tiny size, so a change that breaks one fails the suite.

Each script runs as its own process, as a person would run it, against a database of its own
on the test server (``BENCH_DATABASE_URL``) with its manifests and caches in a temporary
directory (``BENCH_CORPORA_DIR``); the test checks it exits 0 and prints its figures. The sizes
are far too small for the figures to mean anything: that is what the README's runs are for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.bench.script_runs import run_script


@pytest.mark.django_db
def test_synthetic_corpus_and_search_latency(bench_database: str, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    built = run_script(
        "build_synthetic_corpus.py",
        *("--chunks", "300", "--real-vectors", "16", "--base-files", "10"),
        env=env,
    )
    assert "base: 10 Django files" in built
    assert (tmp_path / "synthetic.json").exists()
    latency = run_script(
        "search_latency.py",
        *("--corpus", "synthetic", "--repeats", "1"),
        *("--json", str(tmp_path / "latency.json"), "--plans", str(tmp_path / "plans.txt")),
        env=env,
    )
    for mode in ("fulltext", "vector", "hybrid"):
        assert f"  {mode:9s} p50" in latency, f"no {mode} figures"
    assert "WARNING" not in latency, "a required stage did not run"
    assert (tmp_path / "latency.json").stat().st_size > 0
    recall = run_script(
        "vector_recall.py", *("--ef-search", "40", "--extra-queries", "4"),
        *("--json", str(tmp_path / "recall.json")), env=env,
    )  # fmt: skip
    assert "scope all:" in recall and "recall_at_10_mean" in recall
    http = run_script(
        "search_http.py", *("--clients", "2,3", "--seconds", "2,2"),
        *("--json", str(tmp_path / "http.json")),
        env={**env, "REPO_SEARCH_DB_POOL_SIZE": "4"},
    )  # fmt: skip
    phases = json.loads((tmp_path / "http.json").read_text())["phases"]
    assert [p["clients"] for p in phases] == [2, 3], http[-2000:]
    assert all(p["searches"] > 0 and p["error_count"] == 0 for p in phases), http[-2000:]
    # The server's CPU per search (the database's too: the test's cluster runs here) and the
    # rate two unshared cores would give.
    assert all(p["cpu_ms_per_search"]["server"] > 0 for p in phases), http[-2000:]
    assert all(p["cpu_ms_per_search"]["database"] > 0 for p in phases), http[-2000:]
    assert all(p["bound_per_s"] > 0 and len(p["load_average"]) == 6 for p in phases)
    assert "CPU per search: server" in http
    side_by_side = run_script(
        "fulltext_vs_tantivy.py", "--repeats", "1", "--json", str(tmp_path / "tantivy.json"),
        env=env,
    )  # fmt: skip
    assert "tantivy: indexed" in side_by_side
    for system in ("retrieval", "search", "tantivy"):
        assert f"  {system:9s} p50" in side_by_side, f"no {system} figures"
    report = json.loads((tmp_path / "tantivy.json").read_text())
    assert set(report["agreement_postings"]) == {"identifier", "prose", "common words"}


def test_embedding_runtime() -> None:
    output = run_script("embedding_runtime.py", "--repeats", "1", "--chunks", "4")
    assert "numpy + tokenizers" in output and "chunks/s" in output


def test_clone_benchmark(source_tree: Path) -> None:
    output = run_script(
        "clone_benchmark.py",
        *("--source", str(source_tree / "tinypkg-1.0"), "--branches", "1", "--runs", "1"),
        "--no-vendor-branch",
    )
    assert "reposearch fetch_branch (depth 1)" in output
    assert "git clone --depth 1 --bare" in output
    assert "list_tree: 4 entries" in output


def test_index_benchmark(source_tree: Path) -> None:
    # Its own servers and worker: on the suite's broker, the suite's worker would take its tasks.
    output = run_script(
        "index_benchmark.py", "--corpus", str(source_tree), "--embed",
        drop=("DATABASE_URL", "REDIS_URL"),
    )  # fmt: skip
    assert "indexed: 4 files" in output
    assert "searchable by full text" in output
    assert "embedding stage" in output and "standalone model" in output
    assert "worker peak RSS:" in output and "its largest process" in output


def test_index_benchmark_on_an_assembled_repository(tmp_path: Path) -> None:
    output = run_script(
        "index_benchmark.py", "--assemble", "3", env={"BENCH_CORPORA_DIR": str(tmp_path)},
        drop=("DATABASE_URL", "REDIS_URL"),
    )  # fmt: skip
    assert (tmp_path / "assembled-3.git" / "HEAD").exists()
    assert "assembled" in output and "searchable by full text" in output, output[-3000:]
    indexed = int(output.split("indexed: ")[1].split(" files")[0])
    assert indexed > 100  # the venv's and the standard library's text files
    assert "worker peak RSS:" in output


@pytest.mark.django_db
def test_symbol_search_benchmark(bench_database: str, source_tree: Path, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    report = tmp_path / "symbols.json"
    output = run_script(
        "symbol_search.py", "--source", str(source_tree / "tinypkg-1.0"), "--repeats", "1",
        "--json", str(report), env=env,
    )  # fmt: skip
    calls = json.loads(report.read_text())["calls"]
    assert len(calls) == 7 and all("p95" in call for call in calls), output[-2000:]
    assert calls[0]["results"] >= 1  # the name defined once is found


@pytest.mark.django_db
def test_exact_search_benchmark(bench_database: str, source_tree: Path, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    report = tmp_path / "exact.json"
    args = ("--source", str(source_tree / "tinypkg-1.0"), "--repeats", "1", "--json", str(report))
    run_script("exact_search.py", *args, "--copies", "2", "--rg-repeats", "1", env=env)
    figures = json.loads(report.read_text())
    assert figures["chunks_all_corpora"] >= 2 * figures["chunks"] > 0  # (other smoke runs' too)
    everywhere = [q for q in figures["queries"] if q["scope"] == "all copies"]
    one = [q for q in figures["queries"] if q["scope"] == "repo:bench/exact"]
    assert len(everywhere) == len(one) == 7 and all("p95" in q for q in everywhere + one)
    returns = {q["scope"]: q for q in figures["queries"] if q["query"] == '"return"'}
    # every module returns: 3 files in the repository, 6 with its copy; rg counts the same
    assert returns["repo:bench/exact"]["total"] == returns["repo:bench/exact"]["rg_files"] == 3
    assert returns["all copies"]["total"] == returns["all copies"]["rg_files"] == 6


@pytest.mark.django_db
def test_branch_benchmark(bench_database: str, source_tree: Path, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    report = tmp_path / "branches.json"
    output = run_script(
        "branch_benchmark.py", "--source", str(source_tree / "tinypkg-1.0"), "--changed", "1",
        "--json", str(report), env=env,
    )  # fmt: skip
    figures = json.loads(report.read_text())
    # tinypkg: 3 modules and a README; next edits one module, adds one file, deletes one.
    second = figures["next as a second branch"]
    assert (second["files"], second["shared_files"], second["branch_files"]) == (2, 2, 4)
    assert figures["next as its own repository"]["files"] == 4
    assert "second branch: 2 file rows" in output, output[-2000:]


def _git_repository(tree: Path) -> Path:
    """``tree`` committed once on ``main``."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "smoke", "GIT_AUTHOR_EMAIL": "smoke@example.invalid",
        "GIT_COMMITTER_NAME": "smoke", "GIT_COMMITTER_EMAIL": "smoke@example.invalid",
    }  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "tiny"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, env=env, capture_output=True)
    return tree


def test_footprint(source_tree: Path) -> None:
    # The whole ``make up`` stack on its own ports and data directory; one-second phases.
    repo = _git_repository(source_tree / "tinypkg-1.0")
    output = run_script(
        "footprint.py", *("--seconds", "1", "--interval", "0.5"),
        *("--index", "--repo", str(repo), "--index-timeout", "180"),
    )  # fmt: skip
    assert "healthy after" in output
    assert "job done, 4 files" in output, output[-3000:]
    assert "one search: 200" in output
    assert "| phase | role | processes | RSS MB (median) |" in output
    for phase in ("idle", "indexing", "idle after indexing", "idle after a search"):
        assert re.search(rf"^\| {phase} \| \*\*total\*\* \| \d+ \| \*\*\d+\*\* ", output, re.M), (
            f"no {phase} total"
        )


@pytest.fixture
def spare_redis() -> Iterator[str]:
    """A Redis database of its own on the test's server: what the script queues stays there."""
    import redis

    url = urlsplit(os.environ["REDIS_URL"])._replace(path="/13").geturl()
    yield url
    redis.Redis.from_url(url).flushdb()


def test_poll_benchmark(migrated_database: str, spare_redis: str) -> None:
    output = run_script(
        "poll_benchmark.py", *("--repos", "4", "--moved", "1", "--threads", "1,2"),
        env={"DATABASE_URL": migrated_database, "REDIS_URL": spare_redis},
    )  # fmt: skip
    for threads in (1, 2):
        line = re.search(rf"^4 repositories, {threads} thread\(s\): .*$", output, re.M)
        assert line, output[-2000:]
        # Every check answered by the refs advertisement alone; the moved tip queues a re-index.
        assert "(0 pack requests)" in line[0] and "1 re-indexes queued, 0 errors" in line[0]
