"""Which product files a hybrid search walks through: what a newcomer reads to follow one request.

    .venv/bin/python bench/search_walk.py [--query "how are request cookies parsed" ...]
        [--json bench/results/walk.json]

Runs ``SearchExecutor`` -- the code the API runs, default settings -- on the benchmark database
(the synthetic corpus of ``bench/build_synthetic_corpus.py``, or ``BENCH_DATABASE_URL``), once
to warm up and once under a profiler that notes every Python call into the product's packages,
on the request's thread and on the retrieval threads (the vector list runs beside the full-text
one). It prints, per query, the files in the order the request first reaches them, with how many
times the walk comes back to each ("stays": consecutive calls in one file count once), split into
the search app and the layers it calls (accounts, indexing, llm).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from bench_db import ROOT, bench_database

PACKAGES = ("search/", "indexing/", "accounts/", "llm/", "reposearch/", "frontend/")
QUERIES = ["how are request cookies parsed", "where is the database connection configured"]


class Walk:
    """The product files calls reach while it is recording, per thread and in first-visit order."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.stays: Counter[str] = Counter()
        self.last: dict[int, str] = {}
        self.threads: dict[str, set[str]] = {}

    def note(self, relative: str) -> None:
        ident = threading.get_ident()
        if self.last.get(ident) != relative:
            self.last[ident] = relative
            self.stays[relative] += 1
            if relative not in self.order:
                self.order.append(relative)
        name = threading.current_thread().name.split("_")[0]
        self.threads.setdefault(name, set()).add(relative)

    def report(self) -> dict[str, Any]:
        in_search = [f for f in self.order if f.startswith("search/")]
        return {
            "files": len(self.order),
            "search_files": len(in_search),
            "stays": sum(self.stays.values()),
            "order": [{"file": f, "stays": self.stays[f]} for f in self.order],
            "by_thread": {name: sorted(files) for name, files in sorted(self.threads.items())},
        }


_recording: Walk | None = None
_lock = threading.Lock()
_ROOT = str(ROOT) + "/"


def _profile(frame: Any, event: str, _arg: Any) -> None:
    if event != "call" or _recording is None:
        return
    filename = frame.f_code.co_filename
    if filename.startswith(_ROOT) and filename[len(_ROOT) :].startswith(PACKAGES):
        with _lock:
            if _recording is not None:
                _recording.note(filename[len(_ROOT) :])


def walk(run: Any) -> dict[str, Any]:
    """The product files ``run()`` calls into (``_profile`` must be installed)."""
    global _recording
    _recording = Walk()
    try:
        run()
    finally:
        found, _recording = _recording, None
    return found.report()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--query", action="append", help="a question to follow (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the walks here")
    args = parser.parse_args(argv)
    queries = args.query or QUERIES
    report: dict[str, Any] = {}
    with bench_database():
        from accounts.visibility import Viewer
        from indexing.models import Repository
        from search.executor import SearchExecutor, SearchRequest

        if not Repository.objects.filter(active_generation__gt=0, chunk_count__gt=0).exists():
            # A search over nothing stops early: its walk would say nothing of a real one.
            print(
                "search_walk: no indexed repository in the benchmark database; build one"
                " (bench/build_synthetic_corpus.py) or point BENCH_DATABASE_URL at one",
                file=sys.stderr,
            )
            return 2
        executor = SearchExecutor()

        def request(query: str) -> SearchRequest:
            return SearchRequest(query=query, viewer=Viewer.everything())

        # Installed before the first search starts the retrieval threads, so they carry it too.
        threading.setprofile(_profile)
        sys.setprofile(_profile)
        executor.run(request(queries[0]))
        for query in queries:
            # caches warm for this query: the walk is the steady state's
            executor.run(request(query))
            # the caller builds its request before the search starts (the API: the view's
            # serializer), so the walk is the search's alone
            asked = request(query)
            found = report[query] = walk(lambda asked=asked: executor.run(asked))
            print(f"\n{query!r}: {found['files']} files ({found['search_files']} in search/), "
                  f"{found['stays']} stays")  # fmt: skip
            for step in found["order"]:
                print(f"  {step['stays']:4d}  {step['file']}")
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
