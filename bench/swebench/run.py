"""SWE-bench Lite localisation: which files (and functions) an issue needs changed, scored
against the gold patches and printed beside SweRank's published table (Table 1).

    .venv/bin/python -m reposearch.embedded_stack run -- sh -c '
        .venv/bin/python manage.py migrate -v0 &&
        nice -n 19 .venv/bin/python bench/swebench/run.py --split report --mirror-dir /work/.mirror'

    ... run.py --repos requests,flask --no-vectors     # a subset, full text only (fast)
    ... run.py --split tune --per-repo 30 --no-vectors  # a sample: 30 instances a repository
    .venv/bin/python bench/swebench/run.py --combine bench/results/swebench-*.json  # pooled

For each repository chosen (``--split`` report/tune/all of ``instances.json``, or ``--repos``),
a local bare git repository is made under ``--work-dir`` from the repository's mirror
(``<mirror-dir>/<owner>+<name>/repo``), with one branch ``swe-<commit[:12]>`` per base commit
(``swebench_git.py``).
It is added to reposearch (the first branch the default one, the others as indexed branches,
so files the commits share are stored once) and indexed in-process (fetch, index, and embed
unless ``--no-vectors``). Each instance's issue text is then localised on its branch by:

- ``localize`` -- the product's issue localisation (``search.localize``), when present;
- ``hits`` -- the baseline: the hybrid search (``SearchExecutor``) with the issue text (double
  quotes read as spaces) cut to the API's 1,000 characters, 50 hits, files ranked by their best chunk, functions by hit order.

With vectors, both are also run with the full-text lists alone (``+fulltext``), on the same
index. Acc@k counts an instance when all its gold files (functions) are in the top k
(``swebench_scoring.py``). Writes per-instance results as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from swebench_data import REPORT_REPOS, TUNE_REPOS, issue_texts  # noqa: E402
from swebench_git import branch_name, local_repository  # noqa: E402
from swebench_scoring import FILE_KS, FUNCTION_KS, score_instance, summarise  # noqa: E402

INSTANCES = HERE / "instances.json"
QUERY_CHARS = 1000  # the search API's longest query
ISSUE_CHARS = 20_000  # the localize mode's longest issue
HITS = 50
TOP = 10

# SweRank (Table 1), SWE-bench Lite, 274 instances: file Acc@1 / Acc@5 (percent).
PUBLISHED = (
    ("BM25 (SweRank Table 1)", 38.7, 61.7),
    ("CodeRankEmbed 137M (SweRank Table 1)", 52.6, 84.7),
    ("SweRankEmbed-Small (SweRank Table 1)", 66.4, 90.9),
    ("Agentless + Claude 3.5 (SweRank Table 1)", 72.6, 79.6),
)

Ranking = tuple[list[str], list[str]]  # (files best first, "path:Class.method" best first)


def _run_job(job_id: int, vectors: bool) -> None:
    from indexing.models import IndexJob
    from indexing.services.stages import fetch_and_index
    from indexing.services.stages.embed import SliceUsedUp, run_embed

    started = time.monotonic()
    if fetch_and_index.run_fetch(job_id) and fetch_and_index.run_index(job_id) and vectors:
        while True:  # the worker retries a used-up slice at once; so does this loop
            try:
                run_embed(job_id)
                break
            except SliceUsedUp as progress:
                print(f"    {progress}", flush=True)
    job = IndexJob.objects.get(pk=job_id)
    print(
        f"    job {job.pk} {job.state} in {time.monotonic() - started:.0f} s"
        f"{' error: ' + job.error if job.error else ''}",
        flush=True,
    )


def index_repository(repo: str, git_dir: Path, branches: Sequence[str], vectors: bool) -> Any:
    """The repository with every branch indexed (and embedded), reused when already so."""
    from indexing.models import IndexedBranch, IndexJob, JobKind, Repository

    name = f"swebench-{repo.replace('/', '-')}"
    repository = Repository.objects.filter(name=name).first()
    if repository is None:
        repository = Repository.objects.create(url=str(git_dir), name=name, branch=branches[0])
    started = time.monotonic()
    if not repository.active_generation:
        print(f"  {name}: indexing {branches[0]} (default branch)", flush=True)
        _run_job(IndexJob.objects.create(repository=repository).pk, vectors)
    for branch in branches[1:]:
        indexed, _ = IndexedBranch.objects.get_or_create(repository=repository, name=branch)
        if not indexed.generation:
            print(f"  {name}: indexing {branch}", flush=True)
            job = IndexJob.objects.create(repository=repository, branch=indexed, kind=JobKind.FULL)
            _run_job(job.pk, vectors)
    repository.refresh_from_db()
    print(
        f"  {name}: {len(branches)} branches, default {repository.file_count} files,"
        f" {repository.chunk_count} chunks, {repository.embedded_count} embedded"
        f" ({time.monotonic() - started:.0f} s)",
        flush=True,
    )
    return repository


def _executor(vectors: bool) -> Any:
    from search.executor import SearchExecutor

    class FullTextOnly(SearchExecutor):
        """The hybrid search with its vector lists off (an index without embeddings)."""

        def run(self, request: Any) -> Any:  # type: ignore[override]
            return super().run(replace(request, use_vector=False))

    return SearchExecutor() if vectors else FullTextOnly()


def rank_by_hits(issue: str, repository: Any, branch: str, executor: Any) -> Ranking:
    """The baseline: one hybrid search with the issue's first 1,000 characters; a file ranks
    by its best chunk, a function by its first hit."""
    from search.types import SearchRequest

    # Double quotes would make the query language require phrases (a traceback's quoted paths
    # then match nothing): they are read as spaces, as a plain full-text engine would.
    request = SearchRequest(
        query=issue.replace('"', " ")[:QUERY_CHARS],
        branches=[branch],
        repo_ids=[repository.pk],
        limit=HITS,
        include_tests=None,
        include_docs=None,
    )
    hits = executor.run(request).hits
    files = list(dict.fromkeys(hit.file_path for hit in hits))
    functions = [f"{hit.file_path}:{hit.symbol}" for hit in hits if hit.symbol]
    return files, list(dict.fromkeys(functions))


def rank_by_localize(issue: str, repository: Any, branch: str, executor: Any) -> Ranking:
    """The product's issue localisation (``search.localize``), files with their functions."""
    from search.localize.service import LocalizeRequest, localize

    request = LocalizeRequest(
        issue=issue[:ISSUE_CHARS], repo_ids=[repository.pk], branches=[branch], limit=TOP
    )
    result = localize(request, executor=executor)
    # Deduplicated: with a branch filter a file can come twice (hybrid hits name the branch,
    # definitions and exact hits do not); the first place counts.
    files = list(dict.fromkeys(f.path for f in result.files))
    functions = [f"{f.path}:{fn.symbol}" for f in result.files for fn in f.functions]
    return files, list(dict.fromkeys(functions))


def rankers(vectors: bool) -> dict[str, Callable[[str, Any, str], Ranking]]:
    """The rankers to run, by name."""
    chosen: dict[str, Callable[[str, Any, str], Ranking]] = {}
    try:
        import search.localize.service  # noqa: F401

        has_localize = True
    except ImportError:
        has_localize = False
    modes = [("", True), ("+fulltext", False)] if vectors else [("+fulltext", False)]
    for suffix, use_vectors in modes:
        executor = _executor(use_vectors)
        if has_localize:
            chosen[f"localize{suffix}"] = partial(rank_by_localize, executor=executor)
        chosen[f"hits{suffix}"] = partial(rank_by_hits, executor=executor)
    return chosen


def select_instances(
    instances: list[dict[str, Any]], split: str, repos: Sequence[str]
) -> list[dict[str, Any]]:
    wanted = {r.strip().lower() for r in repos if r.strip()}
    if wanted:
        return [
            i
            for i in instances
            if i["repo"].lower() in wanted or i["repo"].split("/")[1].lower() in wanted
        ]
    if split == "all":
        return instances
    names = REPORT_REPOS if split == "report" else TUNE_REPOS
    return [i for i in instances if i["repo"] in names]


def instance_number(instance: dict[str, Any]) -> int:
    """The number of an instance id (``sympy__sympy-11400``: 11400)."""
    return int(instance["instance_id"].rsplit("-", 1)[1])


def first_per_repository(instances: list[dict[str, Any]], per_repo: int) -> list[dict[str, Any]]:
    """A reproducible sample: each repository's first ``per_repo`` instances by id number."""
    chosen: list[dict[str, Any]] = []
    for repo in dict.fromkeys(i["repo"] for i in instances):
        own = sorted((i for i in instances if i["repo"] == repo), key=instance_number)
        chosen.extend(own[:per_repo])
    return chosen


def _format(value: float | int | None) -> str:
    return "   -" if value is None else f"{value:5.1f}"


def print_table(summaries: dict[str, dict[str, dict[str, Any]]]) -> None:
    keys = [f"file@{k}" for k in FILE_KS] + [f"function@{k}" for k in FUNCTION_KS]
    header = f"{'ranker':44} {'repo':22} {'n':>4}  " + " ".join(f"{k:>10}" for k in keys)
    print("\n" + header)
    print("-" * len(header))
    for ranker, by_repo in summaries.items():
        for repo, summary in by_repo.items():
            cells = " ".join(f"{_format(summary[k]):>10}" for k in keys)
            print(f"{ranker:44} {repo:22} {summary['instances']:>4}  {cells}")
    for name, acc1, acc5 in PUBLISHED:
        cells = " ".join(f"{c:>10}" for c in (f"{acc1:5.1f}", f"{acc5:5.1f}", "-", "-", "-"))
        print(f"{name:44} {'SWE-bench Lite':22} {274:>4}  {cells}")


def summarise_results(
    results: Sequence[dict[str, Any]], names: Sequence[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Each ranker's Acc@k per repository and pooled."""
    summaries: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        scored = [r for r in results if name in r]
        by_repo: dict[str, dict[str, Any]] = {}
        for repo in dict.fromkeys(r["repo"] for r in scored):
            by_repo[repo] = summarise([r[name] for r in scored if r["repo"] == repo])
        by_repo["pooled"] = summarise([r[name] for r in scored])
        summaries[name] = by_repo
    return summaries


def combine(paths: Sequence[Path]) -> int:
    """The table of several runs' JSON files pooled (an instance's last result counts)."""
    by_id: dict[str, dict[str, Any]] = {}
    names: dict[str, None] = {}
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        names.update(dict.fromkeys(document["summaries"]))
        for row in document["instances"]:
            by_id.setdefault(row["instance_id"], {}).update(row)
    print_table(summarise_results(list(by_id.values()), list(names)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--split", choices=("report", "tune", "all"), default="report")
    parser.add_argument("--repos", default="", help="e.g. requests,flask (overrides --split)")
    parser.add_argument(
        "--per-repo", type=int, help="a sample: each repository's first N instances by id number"
    )
    parser.add_argument("--mirror-dir", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--locagent", type=Path, help="loc_outputs.jsonl (default: its mirror)")
    parser.add_argument("--instances", type=Path, default=INSTANCES)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "data" / "swebench")
    parser.add_argument("--no-vectors", action="store_true", help="full text only (no embedding)")
    parser.add_argument("--json", type=Path, help="per-instance results (default bench/results/)")
    parser.add_argument("--combine", type=Path, nargs="+", help="pool earlier runs' JSON files")
    args = parser.parse_args(argv)
    if args.combine:
        return combine(args.combine)
    vectors = not args.no_vectors

    chosen = select_instances(
        json.loads(args.instances.read_text(encoding="utf-8")), args.split, args.repos.split(",")
    )
    if args.per_repo:
        chosen = first_per_repository(chosen, args.per_repo)
    if not chosen:
        parser.error("no instances chosen")
    texts = issue_texts(args.locagent or args.mirror_dir)
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    os.environ.setdefault("REPO_SEARCH_MAX_BRANCHES", "100")
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    named = rankers(vectors)
    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    for repo in dict.fromkeys(i["repo"] for i in chosen):
        mirror = args.mirror_dir / repo.replace("/", "+") / "repo"
        instances = [i for i in chosen if i["repo"] == repo]
        present: list[dict[str, Any]] = []
        for instance in instances:
            found = mirror.exists() and subprocess.run(
                ["git", "-C", str(mirror), "cat-file", "-e", f"{instance['base_commit']}^{{commit}}"],
                capture_output=True,
            ).returncode == 0  # fmt: skip
            if found:
                present.append(instance)
            else:
                skipped.append(instance["instance_id"])
        if not present:
            print(f"{repo}: no mirror or no base commit at {mirror}; skipped", flush=True)
            continue
        commits = list(dict.fromkeys(i["base_commit"] for i in present))
        print(f"{repo}: {len(present)} instances, {len(commits)} base commits", flush=True)
        git_dir = local_repository(mirror, args.work_dir, repo, commits)
        repository = index_repository(repo, git_dir, [branch_name(c) for c in commits], vectors)
        for instance in present:
            row: dict[str, Any] = {k: instance[k] for k in ("instance_id", "repo", "base_commit")}
            row.update(gold_files=instance["gold_files"], gold_functions=instance["gold_functions"])
            for name, rank in named.items():
                started = time.perf_counter()
                files, functions = rank(
                    texts[instance["instance_id"]], repository, branch_name(instance["base_commit"])
                )
                row[name] = {
                    "files": files[:TOP],
                    "functions": functions[:TOP],
                    "ms": round((time.perf_counter() - started) * 1000),
                    **score_instance(
                        files, functions, instance["gold_files"], instance["gold_functions"]
                    ),
                }
            results.append(row)
            marks = " ".join(f"{n}={'+' if row[n]['file@5'] else '-'}" for n in named)
            print(f"  {instance['instance_id']:32} file@5 {marks}", flush=True)

    summaries = summarise_results(results, list(named))
    print_table(summaries)
    if skipped:
        print(f"\nskipped (base commit missing): {len(skipped)}: {', '.join(skipped)}")
    out = args.json or ROOT / "bench" / "results" / f"swebench-{args.repos or args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "split": args.split,
        "repos": args.repos,
        "per_repo": args.per_repo,
        "vectors": vectors,
        "acc_definition": "all gold files (functions) within the top k",
        "summaries": summaries,
        "published": [{"name": n, "file@1": a1, "file@5": a5} for n, a1, a5 in PUBLISHED],
        "skipped": skipped,
        "instances": results,
    }
    out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
