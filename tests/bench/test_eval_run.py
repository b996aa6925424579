"""``bench/eval/run.py`` end to end: a tiny repository indexed for real, then the ablation."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from bench.eval.harness.command import EvalCommand
from indexing.models import IndexJob, Repository
from indexing.services.stages import fetch_and_index
from indexing.services.stages.embed import run_embed
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.tiny_code import RETRY, SETTINGS, retry_test_source

pytestmark = pytest.mark.django_db(transaction=True)


GUIDE = "# Guide\n\nInstall the app, then set DATABASE_URL and POOL_SIZE.\n"

QUERIES = {
    "corpus": {"package": "tiny"},
    "queries": [
        {
            "id": "ident",
            "query": "retry_with_backoff",
            "kind": "identifier",
            "expected": [
                {
                    "path": "src/app/retry.py",
                    "start_line": 6,
                    "end_line": 13,
                    "symbol": "retry_with_backoff",
                }
            ],
        },
        {
            "id": "how",
            "query": "where is the connection pool size read from the environment",
            "kind": "how",
            "expected": [
                {
                    "path": "src/app/settings.py",
                    "start_line": 15,
                    "end_line": 17,
                    "symbol": "load_settings_from_environment",
                }
            ],
        },
        {
            "id": "tests",
            "query": "tests for retry with backoff",
            "kind": "tests",
            "expected": [
                {
                    "path": "tests/test_retry.py",
                    "start_line": 4,
                    "end_line": 7,
                    "symbol": "test_retry_with_backoff_gives_up",
                }
            ],
        },
    ],
}


@pytest.fixture
def indexed_repository(tmp_path: Path, settings) -> Repository:
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    bare = tmp_path / "tiny.git"
    repo = init_bare_repo(str(bare))
    commit_files(
        repo,
        {
            "src/app/retry.py": RETRY,
            "src/app/settings.py": SETTINGS,
            "tests/test_retry.py": retry_test_source("app"),
            "docs/guide.md": GUIDE,
        },
    )
    repository = Repository.objects.create(url=str(bare), name="tiny", branch="main")
    job = IndexJob.objects.create(repository=repository)
    assert fetch_and_index.run_fetch(job.pk), IndexJob.objects.get(pk=job.pk).error
    assert fetch_and_index.run_index(job.pk), IndexJob.objects.get(pk=job.pk).error
    run_embed(job.pk)
    repository.refresh_from_db()
    assert repository.chunk_count > 0 and repository.embedded_count == repository.chunk_count
    return repository


def _queries_file(tmp_path: Path) -> Path:
    path = tmp_path / "queries.json"
    path.write_text(json.dumps(QUERIES))
    return path


def test_eval_prints_and_writes_the_ablation(
    indexed_repository: Repository, tmp_path: Path
) -> None:
    out, err = StringIO(), StringIO()
    report_path = tmp_path / "report.json"
    call_command(
        EvalCommand(),
        "--repo",
        str(indexed_repository.pk),
        "--queries",
        str(_queries_file(tmp_path)),
        "--k",
        "3",
        "--json",
        str(report_path),
        stdout=out,
        stderr=err,
    )
    text = out.getvalue()
    for name in ("fulltext", "vector", "hybrid", "hybrid+scope"):
        assert f"| {name} |" in text
    assert "+expansion | skipped: --with-llm not given" in text
    report = json.loads(report_path.read_text())
    assert report["k"] == 3 and report["queries"] == 3
    configs = {c["name"]: c for c in report["configurations"]}
    assert configs["+rerank"]["skipped"] == "--with-llm not given"
    # Every configuration that ran found the identifier's definition in its top 3.
    for config in configs.values():
        if config["metrics"]:
            assert config["warnings"] == [], config["name"]
            ident = next(q for q in config["queries"] if q["id"] == "ident")
            assert any(r.startswith("src/app/retry.py:6-13") for r in ident["results"]), config
    # With scope, the definition ranks first (the test that calls it three times is out).
    ident = next(q for q in configs["hybrid+scope"]["queries"] if q["id"] == "ident")
    assert ident["results"][0] == "src/app/retry.py:6-13 retry_with_backoff"
    # Without scope the test file shows up for code queries; with scope it comes back only where
    # it beats some of the code (search.ranking.fusion.place_left_out), so less of it, and it still comes
    # back for the query about tests.
    scoped = configs["hybrid+scope"]
    assert (
        scoped["metrics"]["test_doc_share_code_queries"]
        < configs["hybrid"]["metrics"]["test_doc_share_code_queries"]
    )
    tests_query = next(q for q in scoped["queries"] if q["id"] == "tests")
    assert any(r.startswith("tests/test_retry.py:") for r in tests_query["results"])
    assert configs["hybrid"]["metrics"]["test_doc_share_code_queries"] > 0.0
    for config in configs.values():
        if config["metrics"]:
            assert config["metrics"]["p50_ms"] > 0
            assert 0.0 <= config["metrics"]["mrr"] <= 1.0


def test_llm_configurations_say_why_their_stage_did_not_run(
    indexed_repository: Repository, tmp_path: Path, settings
) -> None:
    settings.LLM_BASE_URL = "http://127.0.0.1:9"  # nothing listens: the chat model is down
    out = StringIO()
    call_command(
        EvalCommand(),
        "--repo",
        "tiny",
        "--queries",
        str(_queries_file(tmp_path)),
        "--k",
        "3",
        "--with-llm",
        "--configs",
        "hybrid+scope,+expansion",
        stdout=out,
        stderr=StringIO(),
    )
    text = out.getvalue()
    # A chat model is configured but unreachable: the row is there, flagged, not passed off
    # as expansion numbers.
    assert "| +expansion |" in text
    assert "- +expansion: 3/3 queries: expansion " in text


def test_bad_arguments_are_clear_errors(indexed_repository: Repository, tmp_path: Path) -> None:
    queries = _queries_file(tmp_path)
    with pytest.raises(CommandError, match="no repository"):
        call_command(EvalCommand(), "--repo", "nope", "--queries", str(queries))
    with pytest.raises(CommandError, match="unknown configuration"):
        call_command(
            EvalCommand(), "--repo", "tiny", "--queries", str(queries), "--configs", "magic"
        )
    broken = tmp_path / "broken.json"
    broken.write_text('{"queries": [{"query": "x", "expected": []}]}')
    with pytest.raises(CommandError, match="expected"):
        call_command(EvalCommand(), "--repo", "tiny", "--queries", str(broken))
    with pytest.raises(CommandError, match="--k"):
        call_command(EvalCommand(), "--repo", "tiny", "--queries", str(queries), "--k", "0")


def test_with_a_chat_model_hyde_runs_and_ask_citations_are_checked(
    indexed_repository: Repository, tmp_path: Path, settings, model_server
) -> None:
    import llm.config

    def answer(messages):  # type: ignore[no-untyped-def]
        prompt = " ".join(str(message.get("content", "")) for message in messages).lower()
        if "hypothetical" in prompt or "hyde" in prompt or "snippet that" in prompt:
            return "def retry_with_backoff(fn, attempts):\n    return fn()"
        return "It retries with backoff in [1], and see [9] too."

    model_server.chat_handler = answer
    settings.LLM_PROVIDER = "ollama"
    settings.LLM_CHAT_MODEL = "llama3.2"
    settings.LLM_BASE_URL = model_server.url
    llm.config.invalidate()
    out = StringIO()
    try:
        call_command(
            EvalCommand(),
            "--repo",
            "tiny",
            "--queries",
            str(_queries_file(tmp_path)),
            "--k",
            "3",
            "--with-llm",
            "--configs",
            "hybrid+scope,+callgraph,+hyde",
            "--json",
            str(tmp_path / "llm.json"),
            stdout=out,
            stderr=StringIO(),
        )
    finally:
        llm.config.invalidate()
    report = json.loads((tmp_path / "llm.json").read_text())
    configs = {c["name"]: c for c in report["configurations"]}
    assert configs["+hyde"]["metrics"] is not None
    assert configs["+hyde"]["warnings"] == [], configs["+hyde"]["warnings"]
    assert configs["+callgraph"]["metrics"] is not None
    assert configs["+callgraph"]["context_size"] >= 3  # the hits, plus any definitions they call
    assert 0.0 <= configs["+callgraph"]["context_recall"] <= 1.0
    assert (
        configs["+callgraph"]["context_recall"] >= configs["hybrid+scope"]["metrics"]["recall_at_k"]
    )
    citations = report["context"]["ask_citations"]
    assert citations["answered"] == 3
    assert citations["rate"] == 1.0  # [1] resolves to a context chunk; the invented [9] is removed
    assert citations["removed"] == 3
    assert "3/3 answers cite only chunks that were in their context (100 %)" in out.getvalue()


def _manifest(tmp_path: Path, queries: Path, names: tuple[str, ...] = ("tiny",)) -> Path:
    corpora = [
        {
            "name": name,
            "language": "python",
            "source": "pypi",
            "package": name,
            "version": "1.0",
            "sha256": "0" * 64,
            "split": "report",
            "queries": str(queries),  # absolute: the harness joins it to the checkout
        }
        for name in names
    ]
    path = tmp_path / "corpora.json"
    path.write_text(json.dumps({"corpora": corpora}))
    return path


def _split(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    """``bench/eval/run.py --split report`` on the tiny corpus: its text and its JSON report."""
    out = StringIO()
    report_path = tmp_path / "split.json"
    manifest = str(_manifest(tmp_path, _queries_file(tmp_path)))
    call_command(
        EvalCommand(), "--split", "report", "--manifest", manifest, "--json", str(report_path), *args,
        stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return out.getvalue(), json.loads(report_path.read_text())


def test_split_reports_pooled_per_corpus_and_a_paired_interval(
    indexed_repository: Repository, tmp_path: Path
) -> None:
    text, report = _split(
        tmp_path, "--configs", "hybrid,hybrid+scope", "--compare", "hybrid,hybrid+scope"
    )
    assert "Split report: 1 corpora (tiny), 3 queries, k=10" in text  # k=10 by default
    assert "| configuration | MRR@10 | hit@1 | hit@10 |" in text
    assert "MRR@10 per corpus" in text and "| configuration | tiny (3) |" in text
    assert "hybrid+scope - hybrid: " in text and "(1000 resamples, seed 16)" in text
    assert report["split"] == "report" and report["k"] == 10
    assert report["corpora"][0]["commit"] == indexed_repository.last_indexed_commit
    (comparison,) = report["comparisons"]
    assert comparison["pairs"] == 3
    assert comparison["low"] <= comparison["difference"] <= comparison["high"]
    pooled = report["pooled"]["hybrid+scope"]
    assert pooled["by_kind"]["identifier"]["mrr"] == 1.0  # the definition ranks first
    assert report["every_repository"] is False


def test_split_over_every_repository_says_so(
    indexed_repository: Repository, tmp_path: Path
) -> None:
    text, report = _split(tmp_path, "--configs", "hybrid+scope", "--every-repository")
    assert "Searched over every repository; a hit counts only in its question's own" in text
    assert report["every_repository"] is True
    assert report["pooled"]["hybrid+scope"]["by_kind"]["identifier"]["mrr"] == 1.0


def test_split_errors_are_clear(indexed_repository: Repository, tmp_path: Path) -> None:
    queries = _queries_file(tmp_path)
    manifest = str(_manifest(tmp_path, queries, ("tiny", "absent")))
    with pytest.raises(CommandError, match="corpus absent is not indexed: run bench/eval/index"):
        call_command(EvalCommand(), "--split", "all", "--manifest", manifest)
    with pytest.raises(CommandError, match="no corpus in split 'tune'"):
        call_command(EvalCommand(), "--split", "tune", "--manifest", manifest)
    with pytest.raises(CommandError, match="no corpus named nine"):
        call_command(EvalCommand(), "--split", "all", "--manifest", manifest, "--corpus", "nine")
    with pytest.raises(CommandError, match="not among the configurations run"):
        call_command(
            EvalCommand(), "--split", "all", "--manifest", manifest, "--corpus", "tiny",
            "--configs", "hybrid", "--compare", "hybrid,vector",
        )  # fmt: skip
    with pytest.raises(CommandError, match="two different configurations"):
        call_command(EvalCommand(), "--split", "all", "--manifest", manifest, "--compare", "hybrid")
    needs_split = "--compare, --corpus and --every-repository need --split"
    with pytest.raises(CommandError, match=needs_split):
        call_command(EvalCommand(), "--repo", "tiny", "--queries", str(queries), "--compare", "a,b")
    with pytest.raises(CommandError, match=needs_split):
        call_command(
            EvalCommand(), "--repo", "tiny", "--queries", str(queries), "--every-repository"
        )
    with pytest.raises(CommandError, match="leave out --repo"):
        call_command(EvalCommand(), "--split", "all", "--manifest", manifest, "--repo", "tiny")
    with pytest.raises(CommandError, match="give --split, or both"):
        call_command(EvalCommand(), "--repo", "tiny")
    bad = tmp_path / "bad.json"
    bad.write_text('{"corpora": [{"name": "x"}]}')
    with pytest.raises(CommandError, match="missing or empty string field"):
        call_command(EvalCommand(), "--split", "all", "--manifest", str(bad))


def test_split_against_a_saved_baseline(indexed_repository: Repository, tmp_path: Path) -> None:
    manifest = str(_manifest(tmp_path, _queries_file(tmp_path)))
    before = tmp_path / "before.json"
    call_command(
        EvalCommand(), "--split", "report", "--manifest", manifest, "--configs", "hybrid,vector",
        "--json", str(before), stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    saved = json.loads(before.read_text())
    ranks = [q["rank"] for q in saved["per_corpus"]["tiny"]["configurations"][0]["queries"]]
    assert len(ranks) == 3 and all(r is None or 1 <= r <= 10 for r in ranks)
    out = StringIO()
    call_command(
        EvalCommand(), "--split", "report", "--manifest", manifest, "--configs", "hybrid,hybrid+scope",
        "--baseline", str(before), stdout=out, stderr=StringIO(),
    )  # fmt: skip
    text = out.getvalue()
    assert f"Against the baseline {before}" in text
    # The same code and index: hybrid is unchanged question by question.
    assert "- hybrid (after) - hybrid (before): +0.000" in text
    assert "- hybrid+scope: not in the baseline, not compared" in text
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**saved, "k": 5}))
    with pytest.raises(CommandError, match="different k: 5 vs 10"):
        call_command(
            EvalCommand(), "--split", "report", "--manifest", manifest, "--configs", "hybrid",
            "--baseline", str(other), stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
