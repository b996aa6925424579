"""Symbol search, go to definition and find references latency (p50 / p95).

    .venv/bin/python -m reposearch.embedded_stack run -- \
        .venv/bin/python bench/symbol_search.py [--source DIR] [--repeats 5] [--json out.json]

``--source`` (default: the installed Django package) is committed into a throwaway git
repository, fetched and indexed by the real pipeline (no embeddings) into the benchmarks'
PostgreSQL (``bench_db``), as ``bench/exact_search.py`` does (the fetch takes a clone slot in Redis, hence the embedded stack). Each call runs the services the
API views call (``search.symbols``) once to warm up, then ``--repeats`` times, as an
administrator's viewer. Names: the most common
definition name, a name defined once and called somewhere, a prefix of it and a misspelling of it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_db import bench_database
from exact_search import _git_repository, _percentiles, corpus_arguments


def _timed(call: Callable[[], int], repeats: int) -> tuple[dict[str, float], int]:
    times, found = [], 0
    for _ in range(repeats + 1):
        began = time.perf_counter()
        found = call()
        times.append((time.perf_counter() - began) * 1000)
    return _percentiles(times[1:]), found


def _names(repository_id: Any, generation: int) -> tuple[str, str]:
    """The most common definition name and a long name defined exactly once."""
    from django.db.models import Count
    from django.db.models.functions import Length

    from indexing.models import Chunk

    live = Chunk.objects.filter(repository_id=repository_id, generation=generation).exclude(
        symbol_name=""
    )
    counted = live.values("symbol_name").annotate(n=Count("id"))
    common = counted.order_by("-n", "symbol_name").first()
    once = (
        counted.filter(n=1)
        .annotate(length=Length("symbol_name"))
        .filter(length__gte=10)
        .order_by("symbol_name")
        .values_list("symbol_name", flat=True)[:500]
    )
    if common is None:
        raise SystemExit("no definitions indexed")
    # Prefer one that is called somewhere, so its references are more than nothing.
    called = next((name for name in once if live.filter(calls__contains=[name]).exists()), None)
    return common["symbol_name"], called or next(iter(once), common["symbol_name"])


def main() -> None:
    args = corpus_arguments(__doc__)
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")  # the corpus is a local clone
    with bench_database(), tempfile.TemporaryDirectory() as work:
        from accounts.visibility import Viewer
        from indexing.models import IndexJob, JobKind, Repository
        from indexing.services.stages.fetch_and_index import run_fetch, run_index
        from search.symbols.references import find_references
        from search.symbols.service import go_to_definition, search_symbols

        tree = _git_repository(args.source, Path(work))
        Repository.objects.filter(name="bench/symbols").delete()
        started = time.perf_counter()
        # Rows made directly (add_repository would also enqueue the job on a broker).
        added = Repository.objects.create(url=str(tree), name="bench/symbols")
        job = IndexJob.objects.create(repository=added, kind=JobKind.FULL)
        assert run_fetch(job.pk) and run_index(job.pk)
        index_s = time.perf_counter() - started
        repository = Repository.objects.get(pk=job.repository_id)
        common, single = _names(repository.pk, repository.active_generation)
        misspelt = single[:-2] + single[-1] if len(single) > 3 else single + "x"
        viewer = Viewer.everything()
        repo = str(repository.pk)
        calls: list[tuple[str, Callable[[], int]]] = [
            (
                f"symbols q={single} (exact)",
                lambda: len(search_symbols(single, viewer, repo=repo).hits),
            ),
            (
                f"symbols q={single[:4]} (prefix)",
                lambda: len(search_symbols(single[:4], viewer, repo=repo).hits),
            ),
            (
                f"symbols q={misspelt} (fuzzy)",
                lambda: len(search_symbols(misspelt, viewer, repo=repo).hits),
            ),
            (
                f"symbols q={common} (most defined)",
                lambda: len(search_symbols(common, viewer).hits),
            ),
            (
                f"definitions name={common}",
                lambda: len(go_to_definition(common, viewer, repo=repo).hits),
            ),
            (
                f"references name={single}",
                lambda: len(find_references(single, viewer, repo=repo).references),
            ),
            (
                f"references name={common}",
                lambda: len(find_references(common, viewer, repo=repo).references),
            ),
        ]
        report: dict[str, Any] = {
            "source": str(args.source),
            "files": repository.file_count,
            "chunks": repository.chunk_count,
            "index_seconds": round(index_s, 1),
            "calls": [],
        }
        for label, call in calls:
            timing, found = _timed(call, args.repeats)
            report["calls"].append({"call": label, **timing, "results": found})
            print(json.dumps(report["calls"][-1]))
        print(json.dumps({k: v for k, v in report.items() if k != "calls"}))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
