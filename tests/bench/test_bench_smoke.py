"""Every benchmark script runs at a tiny size, so a change that breaks one fails the suite.

Each script runs as its own process, as a person would run it, against a database of its own
on the test server (``BENCH_DATABASE_URL``) with its manifests and caches in a temporary
directory (``BENCH_CORPORA_DIR``). The test checks that it exits 0 and produces its output: the
JSON report or the rows it writes, or -- for a script that only prints -- one row of figures
per thing it measures, read as numbers (what the sizes imply: 4 files, 1 re-index queued, no
error), never its wording. The sizes are far too small for the figures to mean anything: that
is what the README's runs are for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.bench.script_runs import run_script

NUMBER = r"(\d+(?:\.\d+)?)"


def figures(pattern: str, output: str) -> list[tuple[float, ...]]:
    """The numbers of every printed line matching ``pattern`` (its groups), in order."""
    return [
        tuple(float(group) for group in found.groups())
        for found in re.finditer(pattern, output, re.M)
    ]


def count_rows(database_url: str, table: str) -> int:
    with psycopg.connect(database_url) as connection:
        row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
    assert row is not None
    return int(row[0])


@pytest.mark.django_db
# Seven benchmark scripts in a row, each a process of its own: at a load of 6-8 they passed the
# suite's 300 s per test once.
@pytest.mark.timeout(900)
def test_synthetic_corpus_and_search_latency(bench_database: str, tmp_path: Path) -> None:
    env = {"BENCH_DATABASE_URL": bench_database, "BENCH_CORPORA_DIR": str(tmp_path)}
    run_script(
        "build_synthetic_corpus.py",
        *("--chunks", "300", "--real-vectors", "16", "--base-files", "10"),
        env=env,
    )
    manifest = json.loads((tmp_path / "synthetic.json").read_text())
    assert manifest["parameters"]["chunks"] == 300 and manifest["base_files"] == 10
    # The corpus the manifest describes is in the database.
    assert count_rows(bench_database, "indexing_chunk") == manifest["chunks"] >= 300
    assert count_rows(bench_database, "indexing_repository") == manifest["repositories"] > 1

    run_script(
        "search_latency.py",
        # The cross-encoder's mode runs in test_distinct_corpus_smoke (here it doubled the time).
        *("--corpus", "synthetic", "--repeats", "1", "--modes", "fulltext,vector,hybrid"),
        *("--json", str(tmp_path / "latency.json"), "--plans", str(tmp_path / "plans.txt")),
        env=env,
    )
    latency = json.loads((tmp_path / "latency.json").read_text())
    for scope in ("synthetic", "synthetic_one_repo"):
        assert set(latency[scope]) >= {"fulltext", "vector", "hybrid"}
        assert "hybrid+cross-encoder" not in latency[scope]  # not asked for
        for mode in ("fulltext", "vector", "hybrid"):
            timed = latency[scope][mode]
            assert timed["all"]["runs"] > 0 and 0 < timed["all"]["p50"] <= timed["all"]["p95"]
            assert timed["stages_not_run"] == {}, (scope, mode)  # every required stage ran
        assert latency[scope]["plans"]["statements"] > 0
    assert (tmp_path / "plans.txt").read_text().count("#####") == 2  # one plan set a scope

    run_script(
        "vector_recall.py", *("--ef-search", "40", "--extra-queries", "4"),
        *("--json", str(tmp_path / "recall.json")), env=env,
    )  # fmt: skip
    recall = json.loads((tmp_path / "recall.json").read_text())
    assert recall["chunks"] == manifest["chunks"] and recall["queries"] > 0
    measured = recall["all"]["ef_search=40"]
    assert (
        0 < measured["recall_at_10_mean"] <= 1 and len(measured["per_query"]) == recall["queries"]
    )

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

    run_script(
        "fulltext_vs_tantivy.py", "--repeats", "1", "--json", str(tmp_path / "tantivy.json"),
        env=env,
    )  # fmt: skip
    report = json.loads((tmp_path / "tantivy.json").read_text())
    assert report["chunks"] == manifest["chunks"] and report["queries"]
    for system in ("retrieval", "search", "tantivy"):
        assert 0 < report[system]["all"]["p50"] <= report[system]["all"]["p95"], system
    assert set(report["agreement_postings"]) == {"identifier", "prose", "common words"}

    # The broad query set, drawn from this corpus, warm and first after start.
    queries = tmp_path / "fulltext_queries.json"
    run_script("fulltext_queries.py", "--per-class", "1", "--out", str(queries), env=env)
    made = json.loads(queries.read_text())["classes"]
    assert all(len(rows) == 1 and 1 <= rows[0]["words"] <= 5 for rows in made.values()), made
    run_script(
        "fulltext_vs_tantivy.py", *("--queries", "broad", "--queries-file", str(queries)),
        *("--repeats", "2", "--cold", "1", "--stream", "--json", str(tmp_path / "broad.json")),
        env=env,
    )  # fmt: skip
    broad = json.loads((tmp_path / "broad.json").read_text())
    for measured in ("warm", "stream"):
        classes = broad[measured]["classes"]
        assert set(classes) == {*made, "all"} and classes["all"]["queries"] == len(made)
        for figures in classes.values():
            assert 0 < figures["search"]["p50"] <= figures["search"]["p95"]
            assert figures["search"]["runs"] == figures["tantivy"]["runs"] > 0
    first = broad["first_after_start"]["queries"]
    assert {group: len(rows) for group, rows in first.items()} == dict.fromkeys(made, 1)
    assert all(row[e]["first_ms"] > 0 for rows in first.values() for row in rows
               for e in ("search", "tantivy"))  # fmt: skip


def test_embedding_runtime() -> None:
    output = run_script("embedding_runtime.py", "--repeats", "1", "--chunks", "4")
    # One row per runtime measured (numpy as shipped, and with OPENBLAS_CORETYPE forced):
    # chunks per second, then the MB it adds to the install -- nothing, both are the runtime's.
    rows = figures(rf"^numpy.*?\s{NUMBER}\s+{NUMBER}\s+\S*$", output)
    assert len(rows) == 2, output[-2000:]
    assert all(rate > 0 and added == 0 for rate, added in rows)


def test_clone_benchmark(source_tree: Path) -> None:
    output = run_script(
        "clone_benchmark.py",
        *("--source", str(source_tree / "tinypkg-1.0"), "--branches", "1", "--runs", "1"),
        "--no-vendor-branch",
    )
    # One row a client (ours, git bare, git, dulwich): best and median seconds, MB sent, on disk.
    clones = figures(rf"{NUMBER} / {NUMBER}\s+{NUMBER}\s+{NUMBER}$", output)
    assert len(clones) == 4 and all(best <= median for best, median, *_ in clones), output
    assert sum(best for best, *_ in clones) > 0  # timed (each to 10 ms: a tiny tree)
    # One row an incremental fetch server: the one-line edit arrives as one changed path.
    updates = figures(rf"{NUMBER} s\s+{NUMBER} kB \({NUMBER} changed path", output)
    assert len(updates) == 2 and all(paths == 1 for *_, paths in updates), output
    assert figures(rf"^list_tree: {NUMBER} entries", output) == [(4.0,)]  # tinypkg's 4 files


def index_report(output: str) -> dict[str, float]:
    """index_benchmark.py's figures: files and chunks indexed, seconds to full-text search,
    the worker's peak RSS (largest process, all summed)."""
    [(files, chunks, _mb)] = figures(
        rf"^indexed: {NUMBER} files, {NUMBER} chunks, {NUMBER} MB", output
    )
    [(searchable,)] = figures(rf"^searchable by full text {NUMBER} s", output)
    [(largest, summed)] = figures(rf"^worker peak RSS: {NUMBER} MB .*?, {NUMBER} MB", output)
    return {"files": files, "chunks": chunks, "searchable_s": searchable,
            "rss_largest": largest, "rss_summed": summed}  # fmt: skip


def test_index_benchmark(source_tree: Path) -> None:
    # Its own servers and worker: on the suite's broker, the suite's worker would take its tasks.
    output = run_script(
        "index_benchmark.py", "--corpus", str(source_tree), "--embed",
        drop=("DATABASE_URL", "REDIS_URL"),
    )  # fmt: skip
    report = index_report(output)
    assert (report["files"], report["chunks"]) == (4, 4), output[-3000:]
    assert report["searchable_s"] > 0 and 0 < report["rss_largest"] <= report["rss_summed"]
    # A row a stage, the embedding stage's with its rate, and the standalone model's rate.
    stages = figures(
        r"^  (?:cloning|walking|chunking|storing|embedding)\s+" + NUMBER + " s", output
    )
    assert len(stages) == 5
    [(stage_rate, model_rate, _share)] = figures(
        rf"^embedding stage {NUMBER} chunks/s; .*? {NUMBER} chunks/s \({NUMBER} %\)", output
    )
    assert stage_rate > 0 and model_rate > 0


def test_index_benchmark_on_an_assembled_repository(tmp_path: Path) -> None:
    output = run_script(
        "index_benchmark.py", "--assemble", "3", env={"BENCH_CORPORA_DIR": str(tmp_path)},
        drop=("DATABASE_URL", "REDIS_URL"),
    )  # fmt: skip
    assert (tmp_path / "assembled-3.git" / "HEAD").exists()
    report = index_report(output)
    assert report["files"] > 100, output[-3000:]  # the venv's and the standard library's files
    assert report["chunks"] > report["files"] and report["searchable_s"] > 0
    assert 0 < report["rss_largest"] <= report["rss_summed"]


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
    assert figures["next as its own repository"]["files"] == 4, output[-2000:]


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
    # The repository indexed to the end (files, chunks, vectors) and a search answered.
    assert figures(rf"job done, {NUMBER} files, {NUMBER} chunks, {NUMBER} vectors", output) == [
        (4, 4, 4)
    ], output[-3000:]
    assert figures(rf"^one search: {NUMBER}$", output) == [(200,)]
    # A row of memory per role and phase; each phase's total sums its roles' processes.
    for phase in ("idle", "indexing", "idle after indexing", "idle after a search"):
        roles = figures(rf"^\| {phase} \| [^*|]+ \| {NUMBER} \| {NUMBER} \|", output)
        [(processes, rss)] = figures(
            rf"^\| {phase} \| \*\*total\*\* \| {NUMBER} \| \*\*{NUMBER}\*\* ", output
        )
        assert len(roles) >= 5 and all(count > 0 and mb > 0 for count, mb in roles), phase
        assert processes == sum(count for count, _ in roles) and rss > 0, phase


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
    # A row a cycle (1 thread, then 2): every check is answered by the refs advertisement alone
    # (4 requests, 0 pack requests), the moved tip queues one re-index, no error.
    cycles = figures(
        rf"^{NUMBER} repositories, {NUMBER} thread\(s\): {NUMBER} s wall .*?"
        rf"{NUMBER} requests \({NUMBER} pack requests\), .*?"
        rf"{NUMBER} re-indexes queued, {NUMBER} errors$",
        output,
    )
    assert [(repos, threads) for repos, threads, *_ in cycles] == [(4, 1), (4, 2)], output[-2000:]
    assert all(wall > 0 for _, _, wall, *_ in cycles)
    assert [tuple(row[3:]) for row in cycles] == [(4, 0, 1, 0)] * 2, output[-2000:]
