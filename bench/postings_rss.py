"""Memory of 1, 2 and 4 search processes after warm full-text searches (issue 32 item 4).

Each process is a plain Python process that sets Django up against the benchmark database
(``bench_db``: by default the synthetic corpus of ``build_synthetic_corpus.py``) and answers the
full-text searches its parent sends it (``fulltext_search`` over every repository, the engine a
web worker runs), as a uvicorn worker would. The parent sends each process the same queries
``--rounds`` times (all processes at once), then reads ``/proc/<pid>/smaps_rollup`` of each:

- ``idle``: after the server's warm-up (``postings_memory.warm_up``: numba and the compiled
  loops loaded) and one search of a word no list holds;
- ``warm``: after the rounds of queries;
- ``warm_trimmed``: then after ``malloc_trim(0)``: without what the allocator kept of memory
  freed since (the buffers of the lists read from the database, in the first round).

RSS counts a page of a file that several processes map in each of them; PSS divides it between
them, so the PSS of the processes adds up to what they hold together, and ``anon`` (private
memory: the lists a process keeps in its own memory) is what grows with each process. The
posting list files (``REPO_SEARCH_POSTINGS_DIR``, a fresh temporary directory per run) are
reported with their size on disk (the one copy of the host's page cache) and number, and how
many of them each process maps; the first search (a fresh host's) and the first round (every
query's lists new to the host) are timed too.

``--code DIR`` runs the processes on another checkout's search code, e.g. the code before the
files, to compare (same database, same queries)::

    git worktree add /tmp/wt-before 82a584c
    .venv/bin/python bench/postings_rss.py --code /tmp/wt-before --label before
    .venv/bin/python bench/postings_rss.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_db import ROOT, bench_database

QUERIES = [
    "request response",
    "queryset filter exclude",
    "model field default",
    "form validation error message",
    "cache key timeout",
    "template render context",
    "url pattern resolve",
    "middleware process request",
    "database connection cursor execute",
    "migration operation state",
    "http header content type",
    "session user authenticate",
    "return self value",
    "import from django",
]
ABSENT = "zzqxjvplugh"  # in no list: a search that loads the engine, reads only empty lists

TRIM = "!malloc_trim"
WORKER = f"""
TRIM = {TRIM!r}
import ctypes, json, os, sys, time
import django
django.setup()
from accounts.visibility import Viewer
from search.executor import SearchRequest
from search.retrieval.fulltext import fulltext_search
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from search.retrieval.postings_memory import warm_up
warm_up()  # the compiled loops, as the server loads them at start
if os.environ.get("BENCH_HOT_LISTS"):  # lists at hand other than HOT_LISTS
    from search.retrieval import postings_cache
    postings_cache._HOT = type(postings_cache._HOT)(int(os.environ["BENCH_HOT_LISTS"]))
if os.environ.get("BENCH_KNOWN_LISTS"):  # places of lists kept other than KNOWN_LISTS
    from search.retrieval import postings_files
    postings_files.KNOWN_LISTS = int(os.environ["BENCH_KNOWN_LISTS"])
for line in sys.stdin:
    query = line.strip()
    if query == TRIM:  # what the allocator keeps of freed memory goes back to the system
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        print("{{}}", flush=True)
        continue
    started = time.perf_counter()
    scope = build_scope_filter(resolve_scope(SearchRequest(query=query)),
                               scope_repositories(None, Viewer.everything()))
    found = fulltext_search(parse_query(query), scope, limit=10, cap=10**6)
    print(json.dumps({{"ms": (time.perf_counter() - started) * 1000,
                      "loaded": found.detail.get("lists_loaded"),
                      "fallback": found.detail.get("fallback")}}), flush=True)
"""


def memory(pid: int) -> dict[str, int]:
    """kB of ``smaps_rollup``: Rss, Pss, Pss_Anon, Pss_File, Anonymous, and private (USS)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    return {
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "pss_anon": fields.get("Pss_Anon", 0),
        "pss_file": fields.get("Pss_File", 0),
        "anon": fields["Anonymous"],
        "uss": fields["Private_Clean"] + fields["Private_Dirty"],
    }


def mappings(pid: int, postings_dir: Path) -> int:
    """How many of the process's mappings are posting list files (packs)."""
    with open(f"/proc/{pid}/maps") as maps:
        return sum(str(postings_dir) in line for line in maps)


def ask(processes: list[subprocess.Popen[str]], query: str) -> list[dict[str, object]]:
    """``query`` to every process at once; their answers."""
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(query + "\n")
        process.stdin.flush()
    answers = []
    for process in processes:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(
                f"a search process ended: {process.stderr.read() if process.stderr else ''}"
            )
        answers.append(json.loads(line))
    return answers


def broad_queries() -> list[str]:
    """The 225 queries of ``bench/fulltext_queries.json`` (five classes, drawn from the corpus)."""
    drawn = json.loads((ROOT / "bench" / "fulltext_queries.json").read_text())
    return [q["query"] for queries in drawn["classes"].values() for q in queries]


def run(
    count: int,
    code: Path,
    rounds: int,
    postings_dir: Path,
    queries: list[str],
    hot_lists: int | None = None,
    known_lists: int | None = None,
) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code), "REPO_SEARCH_POSTINGS_DIR": str(postings_dir)}
    if hot_lists:
        env["BENCH_HOT_LISTS"] = str(hot_lists)
    if known_lists is not None:
        env["BENCH_KNOWN_LISTS"] = str(known_lists)
    pipe = subprocess.PIPE
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=code,
            env=env,
            text=True,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
        )
        for _ in range(count)
    ]
    try:
        ask(processes, ABSENT)
        time.sleep(1)
        idle = [memory(p.pid) for p in processes]
        timings: list[list[float]] = [[] for _ in queries]
        fallbacks: set[str] = set()
        loaded_last_round = 0
        for round_ in range(rounds):
            for q, query in enumerate(queries):
                for answer in ask(processes, query):
                    timings[q].append(float(answer["ms"]))  # type: ignore[arg-type]
                    if answer["fallback"]:
                        fallbacks.add(str(answer["fallback"]))
                    if round_ == rounds - 1:
                        loaded_last_round += int(answer["loaded"] or 0)  # type: ignore[call-overload]
        time.sleep(1)
        warm = [memory(p.pid) for p in processes]
        mapped = [mappings(p.pid, postings_dir) for p in processes]
        for process in processes:  # one at a time: no answer to read as a search's
            ask([process], TRIM)
        trimmed = [memory(p.pid) for p in processes]
    finally:
        for process in processes:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=60)
    on_disk = sum(f.stat().st_size for f in postings_dir.rglob("*") if f.is_file())
    files = sum(1 for f in postings_dir.rglob("*") if f.is_file() and f.name != ".lock")
    last = [t[-count:] for t in timings]
    first = [t[:count] for t in timings]
    return {
        "processes": count,
        "idle": idle,
        "warm": warm,
        "warm_trimmed": trimmed,
        "files_bytes": on_disk,
        "files": files,
        "mappings": mapped,  # of posting list files, per process, after the rounds
        "lists_read_in_last_round": loaded_last_round,
        "last_round_ms_mean": round(sum(map(sum, last)) / sum(map(len, last)), 1),
        # the first round: every query's lists new to the host (the first process writes them)
        "first_round_ms_mean": round(sum(map(sum, first)) / sum(map(len, first)), 1),
        "first_search_ms": round(max(first[0]), 1),  # a fresh host's first search
        "fallbacks": sorted(fallbacks),
    }


def report(result: dict[str, object]) -> None:
    idle, warm, on_disk = result["idle"], result["warm"], result["files_bytes"]
    mapped = result["mappings"]
    assert isinstance(mapped, list)
    trimmed = result["warm_trimmed"]
    assert isinstance(idle, list) and isinstance(warm, list) and isinstance(trimmed, list)
    assert isinstance(on_disk, int)

    def mb(rows: list[dict[str, int]], key: str) -> str:
        return "/".join(f"{row[key] / 1024:.0f}" for row in rows)

    print(
        f"{result['processes']} process(es): warm RSS {mb(warm, 'rss')} MB, anon {mb(warm, 'anon')},"
        f" PSS {mb(warm, 'pss')} (sum {sum(r['pss'] for r in warm) / 1024:.0f});"
        f" after malloc_trim anon {mb(trimmed, 'anon')},"
        f" PSS sum {sum(r['pss'] for r in trimmed) / 1024:.0f};"
        f" idle RSS {mb(idle, 'rss')}, anon {mb(idle, 'anon')};"
        f" files {on_disk / 2**20:.1f} MB in {result['files']},"
        f" mapped {'/'.join(str(m) for m in mapped)}; lists read in the last round"
        f" {result['lists_read_in_last_round']}; first search {result['first_search_ms']} ms,"
        f" first round {result['first_round_ms_mean']} ms/search,"
        f" last round {result['last_round_ms_mean']} ms/search"
        f"{'; fallbacks ' + str(result['fallbacks']) if result['fallbacks'] else ''}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout the processes run")
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--queries", choices=["few", "broad"], default="few",
        help="few: 14 built in; broad: the 225 of bench/fulltext_queries.json",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures there too")
    parser.add_argument("--hot-lists", type=int, help="lists each process keeps at hand")
    parser.add_argument("--known-lists", type=int, help="places of lists each process keeps")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(args.code), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    load = os.getloadavg()
    print(f"code {args.code} at {commit or '?'} {args.label}; load {load[0]:.2f} {load[1]:.2f}")
    queries = QUERIES if args.queries == "few" else broad_queries()
    print(f"{len(queries)} queries, {args.rounds} rounds (the first cold)")
    results = []
    with bench_database():
        for count in args.workers:
            postings_dir = Path(tempfile.mkdtemp(prefix="postings-rss-"))
            try:
                result = run(
                    count, args.code.resolve(), args.rounds, postings_dir, queries,
                    args.hot_lists, args.known_lists,
                )  # fmt: skip
            finally:
                shutil.rmtree(postings_dir, ignore_errors=True)
            report(result)
            results.append(result)
    if args.json:
        figures = {"commit": commit, "label": args.label, "queries": len(queries), "load": load,
                   "hot_lists": args.hot_lists, "known_lists": args.known_lists}  # fmt: skip
        args.json.write_text(json.dumps({**figures, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
