"""Every script of ``bench/eval`` runs on two tiny corpora, so a change that breaks one fails.

The corpora are two tiny Python "packages" served as sdists from a local folder (pip's
``--find-links``, no index), so ``fetch_corpus.py`` downloads, checks the sha256 of and commits
them as it does the real ones; the manifest (``--manifest``) and its query files are in a
temporary directory, the trees in ``BENCH_CORPORA_DIR``, and the scripts' database is one of
their own (``DATABASE_URL``, as ``manage.py`` reads it). Each script runs as its own process, as
a person runs it; a test checks it exits 0 and what a user of the script relies on: the trees,
repositories, reports and model files it makes, and that its figures are figures (never what
they are: with three questions a corpus they mean nothing).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.bench.script_runs import run_script
from tests.tiny_code import RETRY, SETTINGS, retry_test_source

# An in-tree PEP 517 backend with no requirements: ``pip download`` prepares the sdist's
# metadata without reaching an index for setuptools.
BACKEND = """import os


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = os.path.join(directory, "PACKAGE-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as out:
        out.write("Metadata-Version: 2.1\\nName: PACKAGE\\nVersion: 1.0\\n")
    return os.path.basename(info)
"""
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'

SLUGS = '''"""Turning titles into URL slugs."""

import re

RESERVED = {"admin", "api", "login"}


def slugify(title):
    """Lower-case ``title`` and join its words with hyphens."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)


def check_reserved(slug):
    """Refuse a slug that names one of the site's own pages."""
    if slug in RESERVED:
        raise ValueError(f"{slug!r} is reserved")
    return slug
'''
SLUG_GUIDE = "# slugkit\n\n## Install\n\nRun pip install slugkit, then import slugify.\n"

PACKAGES = {
    "retrykit": {
        "src/retrykit/retry.py": RETRY,
        "src/retrykit/settings.py": SETTINGS,
        "tests/test_retry.py": retry_test_source("retrykit"),
        "README.md": "# retrykit\n\nRetry flaky calls with exponential backoff.\n",
    },
    "slugkit": {"src/slugkit/text.py": SLUGS, "README.md": SLUG_GUIDE},
}


def _expected(path: str, start: int, end: int, symbol: str = "", heading: str = "") -> dict:
    found = {"path": path, "start_line": start, "end_line": end}
    return {**found, "symbol": symbol} if symbol else {**found, "heading": heading}


QUESTIONS = {
    "retrykit": [
        ("ident", "retry_with_backoff", "identifier",
         _expected("src/retrykit/retry.py", 6, 13, "retry_with_backoff")),
        ("how", "where is the connection pool size read from the environment", "how",
         _expected("src/retrykit/settings.py", 14, 16, "load_settings_from_environment")),
        ("tests", "tests for retry with backoff", "tests",
         _expected("tests/test_retry.py", 4, 7, "test_retry_with_backoff_gives_up")),
    ],
    "slugkit": [
        ("how", "how are titles turned into url slugs", "how",
         _expected("src/slugkit/text.py", 8, 11, "slugify")),
        ("locate", "where are reserved words refused", "locate",
         _expected("src/slugkit/text.py", 14, 18, "check_reserved")),
        ("docs", "how do I install it", "docs", _expected("README.md", 3, 5, heading="Install")),
    ],
}  # fmt: skip


@dataclass
class TinyCorpora:
    env: dict[str, str]  # the scripts' database, the trees' folder, pip's local archives
    manifest: Path
    queries: dict[str, Path]  # corpus name -> its query file
    trees: Path
    fetched: str  # what fetch_corpus.py printed
    indexed: str  # what index_corpus.py printed

    def corpus_args(self) -> list[str]:
        """``--corpus NAME=QUERIES`` for every corpus (levers.py)."""
        return [f"--corpus={name}={path}" for name, path in self.queries.items()]


def _sdist(package: str, files: dict[str, str], into: Path) -> Path:
    top = into / "source" / f"{package}-1.0"
    backend = BACKEND.replace("PACKAGE", package)
    for path, text in {**files, "pyproject.toml": PYPROJECT, "backend.py": backend}.items():
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text(text)
    archive = into / "archives" / f"{package}-1.0.tar.gz"
    archive.parent.mkdir(exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return archive


@pytest.fixture(scope="module")
def corpora(migrated_database: str, tmp_path_factory: pytest.TempPathFactory) -> TinyCorpora:
    """Both corpora fetched (``fetch_corpus.py --all --check``) and indexed with their vectors
    (``index_corpus.py --split all``), as ``docs/benchmarks.md`` has them prepared."""
    work = tmp_path_factory.mktemp("eval-corpora")
    entries, queries = [], {}
    for split, (package, files) in zip(("tune", "report"), PACKAGES.items(), strict=True):
        archive = _sdist(package, files, work)
        name = f"{package}-1.0"
        queries[name] = work / f"{package}-queries.json"
        rows = [
            {"id": qid, "query": text, "kind": kind, "expected": [expected]}
            for qid, text, kind, expected in QUESTIONS[package]
        ]
        queries[name].write_text(json.dumps({"corpus": {"package": package}, "queries": rows}))
        entries.append({
            "name": name, "language": "python", "source": "pypi", "package": package,
            "version": "1.0", "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
            "split": split, "queries": str(queries[name]),
        })  # fmt: skip
    manifest = work / "corpora.json"
    manifest.write_text(json.dumps({"corpora": entries}))
    env = {
        "DATABASE_URL": migrated_database,
        "BENCH_CORPORA_DIR": str(work / "trees"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(work / "archives"),
    }
    fetched = run_script(
        "eval/fetch_corpus.py", "--manifest", str(manifest), "--all", "--check", env=env
    )
    indexed = run_script(
        "eval/index_corpus.py", "--manifest", str(manifest), "--split", "all", env=env
    )
    return TinyCorpora(env, manifest, queries, work / "trees", fetched, indexed)


def _git(tree: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), *args], capture_output=True, text=True, check=True
    ).stdout


def _repositories(database: str) -> dict[str, tuple[int, int, int, int, str]]:
    """name -> (files, chunks, embedded, active generation, indexed commit) in the scripts' database."""
    with psycopg.connect(database) as connection:
        rows = connection.execute(
            "SELECT name, file_count, chunk_count, embedded_count, active_generation,"
            " last_indexed_commit FROM indexing_repository"
        ).fetchall()
    return {name: tuple(rest) for name, *rest in rows}


def _is_rate(value: float) -> bool:
    return 0.0 <= value <= 1.0


def test_fetch_and_index_corpus(corpora: TinyCorpora) -> None:
    indexed = _repositories(corpora.env["DATABASE_URL"])
    for package, path in (
        ("retrykit", "src/retrykit/retry.py"),
        ("slugkit", "src/slugkit/text.py"),
    ):
        tree = corpora.trees / f"{package}-1.0"
        assert (tree / path).is_file()  # the sdist unpacked, its top folder stripped
        commits = _git(tree, "log", "--format=%H").split()
        assert len(commits) == 1  # committed once, so every machine gets the same commit
        files, chunks, embedded, generation, commit = indexed[f"{package}-1.0"]
        assert commit == commits[0] and generation
        assert files == (6 if package == "retrykit" else 4)  # with pyproject.toml and backend.py
        assert chunks == embedded > 0  # searchable by full text and by vector
    run_script(
        "eval/index_corpus.py", "--manifest", str(corpora.manifest), "--name", "slugkit-1.0",
        env=corpora.env,
    )  # fmt: skip
    # Already indexed at the corpus's commit: reused, not indexed again.
    assert _repositories(corpora.env["DATABASE_URL"])["slugkit-1.0"] == indexed["slugkit-1.0"]


def test_list_chunks(corpora: TinyCorpora) -> None:
    output = run_script(
        "eval/list_chunks.py", "--manifest", str(corpora.manifest), "retrykit-1.0", "src", "tests",
        env=corpora.env,
    )  # fmt: skip
    # The ranges a label should name: path:start-end kind symbol, tests marked T.
    assert "-- src/retrykit/retry.py:6-13 function retry_with_backoff" in output, output
    assert "T- tests/test_retry.py:4-7 function test_retry_with_backoff_gives_up" in output
    assert "README.md" not in output  # only the files asked for


def test_levers(corpora: TinyCorpora, tmp_path: Path) -> None:
    report = tmp_path / "levers.json"
    run_script(
        "eval/levers.py", *corpora.corpus_args(), "--levers", "no intent,rrf k 20",
        "--json", str(report), env=corpora.env,
    )  # fmt: skip
    figures = json.loads(report.read_text())["figures"]
    assert set(figures) == {"retrykit-1.0", "slugkit-1.0", "pooled"}
    for levers in figures.values():
        assert list(levers) == ["defaults", "no intent", "rrf k 20"]
        assert all(_is_rate(lever["mrr"]) for lever in levers.values())
        for name in ("no intent", "rrf k 20"):
            lever = levers[name]
            assert lever["low"] <= lever["difference"] <= lever["high"]
            assert lever["mrr"] - levers["defaults"]["mrr"] == pytest.approx(lever["difference"])


def test_cross_encoder_cost(corpora: TinyCorpora, tmp_path: Path) -> None:
    report = tmp_path / "cost.json"
    run_script(
        "eval/cross_encoder_cost.py", *corpora.corpus_args(), "--tokens", "128,64",
        "--json", str(report), env=corpora.env,
    )  # fmt: skip
    figures = json.loads(report.read_text())
    assert list(figures) == ["128", "64"]
    # every prose question is searched at each length; the lone identifier skips the stage
    asked = sum(
        kind != "identifier" for questions in QUESTIONS.values() for *_, kind, _ in questions
    )
    assert {row["searches"] for row in figures.values()} == {asked}
    for row in figures.values():
        assert 0 < row["stage_p50_ms"] <= row["stage_p95_ms"]
        assert row["stage_p50_ms"] < row["search_p50_ms"] <= row["search_p95_ms"]


def test_ltr_capture_and_train(corpora: TinyCorpora, tmp_path: Path) -> None:
    captured = tmp_path / "ltr.json"
    run_script(
        "eval/ltr_capture.py", "--manifest", str(corpora.manifest), "--split", "all",
        *("--depth", "20", "--out", str(captured)), env=corpora.env,
    )  # fmt: skip
    capture = json.loads(captured.read_text())["corpora"]
    assert [c["corpus"] for c in capture] == ["retrykit-1.0", "slugkit-1.0"]
    assert [len(c["questions"]) for c in capture] == [3, 3]
    question = capture[0]["questions"][0]
    assert question["live_order"] and question["live_hits"]  # what the replay is checked on
    weights = tmp_path / "weights.json"
    output = run_script(
        "eval/ltr_train.py", str(captured), *("--depth", "20", "--lambdas", "0.01,1"),
        *("--extra", "lines_sat30", "--write", "--out", str(weights)), env=corpora.env,
    )  # fmt: skip
    # Captured at depth 20 and replayed at 20: the shipped model's replay is the live order.
    assert "equals the live one for 6 of 6" in output
    model = json.loads(weights.read_text())
    assert len(model["weights"]) == len(model["features"]) > 0
    assert model["features"][-1] == "lines_sat30"
    assert model["meta"]["corpora"] == ["retrykit-1.0", "slugkit-1.0"]


def _comparison_rows(output: str) -> list[tuple[int, float, float, float, float, float]]:
    """The per-kind rows compare_runs.py prints: queries, before, after, difference, CI."""
    rows = re.findall(
        r"^\| \w+ \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([+-][\d.]+) \| \[([+-][\d.]+), ([+-][\d.]+)\] \|$",
        output,
        re.M,
    )
    return [(int(n), *map(float, rest)) for n, *rest in rows]


def test_run_encoder_hybrid_and_compare_runs(corpora: TinyCorpora, tmp_path: Path) -> None:
    """run.py evaluates the split with MiniLM, encoder_hybrid.py with the built-in bge-small;
    compare_runs.py pairs the two reports question by question."""
    split = ("--split", "all", "--manifest", str(corpora.manifest), "--configs", "vector,hybrid")
    before, after = tmp_path / "minilm.json", tmp_path / "bge.json"
    run_script("eval/run.py", *split, "--json", str(before), env=corpora.env)
    run_script(
        "eval/encoder_hybrid.py", "bge-small-en-v1.5", *split, "--json", str(after),
        env=corpora.env,
    )  # fmt: skip
    for report in (before, after):
        data = json.loads(report.read_text())
        assert set(data["per_corpus"]) == {"retrykit-1.0", "slugkit-1.0"}
        assert set(data["pooled"]) == {"vector", "hybrid"}
    same = run_script("eval/compare_runs.py", str(before), str(before), "--config", "hybrid")
    rows = _comparison_rows(same)
    assert sum(row[0] for row in rows) == 6, same  # every question paired, once
    assert all(row[1] == row[2] and row[3] == row[4] == row[5] == 0 for row in rows)
    moved = run_script(
        "eval/compare_runs.py", str(before), str(after), "--config", "vector",
        "--resamples", "200",
    )  # fmt: skip
    rows = _comparison_rows(moved)
    assert sum(row[0] for row in rows) == 6, moved
    assert all(row[4] <= row[3] <= row[5] for row in rows)


def test_ask_stream(corpora: TinyCorpora, model_server: Any, tmp_path: Path) -> None:
    """bench/ask_stream.py (streamed ask through uvicorn) with the tests' Ollama-speaking model
    server as the chat model, on an indexed tiny corpus."""
    model_server.chat_handler = lambda messages: "It sleeps longer after each failure [1]."
    report = tmp_path / "ask.json"
    chat = {
        "LLM_PROVIDER": "ollama", "LLM_EMBEDDING_PROVIDER": "local",
        "LLM_BASE_URL": model_server.url, "LLM_CHAT_MODEL": "llama3.2",
    }  # fmt: skip
    run_script(
        "ask_stream.py", "--repo", "retrykit-1.0", "--questions",
        str(corpora.queries["retrykit-1.0"]), *("--count", "2", "--k", "3"),
        "--json", str(report), env={**corpora.env, **chat},
    )  # fmt: skip
    summary = json.loads(report.read_text())["summary"]
    assert summary["questions"] == summary["answered"] == 2
    assert summary["median_first_word_ms"] is not None
