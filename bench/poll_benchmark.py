"""One polling cycle over many repositories on a local git server: time, requests, bytes, CPU.

    .venv/bin/python -m reposearch.embedded_stack run -- \
        .venv/bin/python bench/poll_benchmark.py [--repos 500] [--moved 10] [--threads 1,8]

Serves ``--repos`` bare repositories (a few files each) from one dulwich smart-HTTP server in
this process, creates one ready Repository row per repository whose indexed commit is its tip,
moves the tip of ``--moved`` of them, then runs ``indexing.services.polling.poll_repository`` --
what each poll task runs -- for every row, once per thread count. Reported per cycle: wall time,
requests the server answered (and how many were pack requests: must be 0), bytes it sent, the
CPU seconds of this process (client and server together, since both run here), and how many
re-indexes were queued. The Celery hop (beat -> dispatcher -> one task per repository) is not
in the timing; in production it adds one broker round trip per check.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--moved", type=int, default=10)
    parser.add_argument("--threads", default="1,8")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    os.environ["REPO_SEARCH_ALLOW_PRIVATE_HOSTS"] = "1"
    os.environ["REPO_SEARCH_MAX_REPOS"] = str(args.repos + 10)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)

    from indexing.models import IndexJob, Repository
    from indexing.services import polling
    from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

    with tempfile.TemporaryDirectory(prefix="reposearch-poll-bench-") as tmp:
        repos = {}
        for i in range(args.repos):
            repo = init_bare_repo(f"{tmp}/r{i}.git")
            commit_files(repo, {"src/app.py": f"def f{i}():\n    return {i}\n", "README.md": "x"})
            repos[f"org/r{i}.git"] = repo
        rows: list[Repository] = []
        with GitHttpServer(repos) as server:
            for cycle, threads in enumerate(int(t) for t in args.threads.split(",")):
                # Only its own rows: the database may be the development stack's.
                Repository.objects.filter(pk__in=[row.pk for row in rows]).delete()
                rows = [
                    Repository(
                        url=server.url(name),
                        name=f"{name}-{cycle}",
                        branch="main",
                        status="ready",
                        active_generation=1,
                        last_indexed_commit=repo.refs[b"refs/heads/main"].decode(),
                    )
                    for name, repo in repos.items()
                ]
                Repository.objects.bulk_create(rows)
                for row in rows[: args.moved]:
                    row.last_indexed_commit = "0" * 40  # as if the remote moved on
                    Repository.objects.filter(pk=row.pk).update(last_indexed_commit="0" * 40)
                server.requests.clear()
                server.bytes_sent = 0

                def poll(row: Repository) -> None:
                    try:
                        polling.poll_repository(row)
                    finally:
                        connections.close_all()

                cpu, started = cpu_seconds(), time.perf_counter()
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(poll, rows))
                wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
                packs = sum(1 for r in server.requests if r.startswith("POST"))
                mine = Repository.objects.filter(pk__in=[row.pk for row in rows])
                jobs = IndexJob.objects.filter(repository__in=mine)
                errors = mine.exclude(poll_error="").count()
                print(
                    f"{args.repos} repositories, {threads} thread(s): {wall:.2f} s wall "
                    f"({wall / args.repos * 1000:.1f} ms per check), {cpu:.2f} s CPU, "
                    f"{len(server.requests)} requests ({packs} pack requests), "
                    f"{server.bytes_sent / 1024:.0f} KiB sent, "
                    f"{jobs.count()} re-indexes queued, {errors} errors"
                )
                jobs.delete()
            Repository.objects.filter(pk__in=[row.pk for row in rows]).delete()


if __name__ == "__main__":
    main()
