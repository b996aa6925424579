"""Memory footprint of ``make up``: resident memory of every process it runs, idle and indexing.

Starts the embedded stack (``python -m reposearch.embedded_stack up``, what ``make up`` runs) on a
throwaway data directory and free ports, waits for ``/api/health`` to answer 200, then samples
every process of the stack (the web server, the Celery worker and its children, Redis and the
PostgreSQL server with its backends) once a second:

1. ``idle``: N seconds after start-up, nothing indexed;
2. ``indexing`` (with ``--index``): a small local repository (by default this checkout's
   ``indexing/`` and ``search/`` packages committed into a temporary git repository; or each
   ``--repo``, or each of the ``--installed`` packages as a repository of its own) is added
   through the API and sampled until every job has finished (fetch, index and embed);
3. ``idle after indexing``: N seconds after the job finished;
4. ``idle after a search``: one ``POST /api/search`` (which embeds the query in the web
   process), then N seconds.

RSS counts pages shared between processes (PostgreSQL's shared buffers, a forked Celery child's
copy-on-write pages) once per process, as ``ps`` and ``top`` do; PSS divides each shared page
between the processes sharing it, so the PSS column adds up to what the stack really holds.

    .venv/bin/python bench/footprint.py --seconds 20 --index
    .venv/bin/python bench/footprint.py --installed celery kombu dulwich rest_framework
    REPO_SEARCH_WEB_WORKERS=2 .venv/bin/python bench/footprint.py --index   # compare settings
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reposearch.embedded_services import free_port  # noqa: E402
from tests.make_up_stack import Stack, make_up  # noqa: E402

MB = 1024 * 1024
FINISHED = ("done", "completed_with_errors", "failed", "cancelled")


def role_of(process: psutil.Process, stack_pid: int, postmaster: int | None) -> str:
    try:
        name = process.name()
        cmdline = " ".join(process.cmdline())
        parent = process.ppid()
    except psutil.Error:
        return "gone"
    if process.pid == stack_pid:
        return "supervisor (embedded_stack up)"
    if postmaster is not None and (process.pid == postmaster or parent == postmaster):
        return "postgres"
    if "redis-server" in name or "redis-server" in cmdline:
        return "redis"
    if "celery" in cmdline:
        try:
            parent_cmd = " ".join(psutil.Process(parent).cmdline())
        except psutil.Error:
            parent_cmd = ""
        return "worker child (pool/beat)" if "celery" in parent_cmd else "worker (main)"
    if "uvicorn" in cmdline or "multiprocessing" in cmdline:
        return "web"
    return name


def postmaster_pid(data_dir: Path) -> int | None:
    pidfile = data_dir / "postgres" / "postmaster.pid"
    try:
        return int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _add_tree(pid: int, found: dict[int, psutil.Process]) -> None:
    """``pid`` and all its descendants into ``found`` (nothing if it is gone)."""
    try:
        process = psutil.Process(pid)
        found[process.pid] = process
        for child in process.children(recursive=True):
            found[child.pid] = child
    except psutil.Error:
        pass


def stack_processes(stack_pid: int, data_dir: Path) -> list[tuple[str, psutil.Process]]:
    found: dict[int, psutil.Process] = {}
    _add_tree(stack_pid, found)
    postmaster = postmaster_pid(data_dir)
    if postmaster is not None:  # pg_ctl daemonises the server: it is not in the stack's tree
        _add_tree(postmaster, found)
    return [(role_of(p, stack_pid, postmaster), p) for p in found.values()]


class Sampler:
    """Per phase and role: the sum of RSS / PSS over the role's processes at each sample."""

    def __init__(self, stack_pid: int, data_dir: Path) -> None:
        self.stack_pid = stack_pid
        self.data_dir = data_dir
        self.phases: dict[str, dict[str, list[tuple[int, float, float]]]] = {}

    def sample(self, phase: str) -> None:
        totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        for role, process in stack_processes(self.stack_pid, self.data_dir):
            try:
                info = process.memory_full_info()
            except psutil.Error:
                continue
            entry = totals[role]
            entry[0] += 1
            entry[1] += info.rss / MB
            entry[2] += getattr(info, "pss", info.rss) / MB
        rows = self.phases.setdefault(phase, defaultdict(list))
        for role, (count, rss, pss) in totals.items():
            rows[role].append((int(count), rss, pss))

    def run_for(self, phase: str, seconds: float, interval: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sample(phase)
            time.sleep(interval)

    def table(self) -> str:
        lines = [
            "| phase | role | processes | RSS MB (median) | RSS MB (max) | PSS MB (median) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for phase, roles in self.phases.items():
            total_rss: list[float] = []
            total_pss: list[float] = []
            for role in sorted(roles):
                samples = roles[role]
                counts = [s[0] for s in samples]
                rss = [s[1] for s in samples]
                pss = [s[2] for s in samples]
                lines.append(
                    f"| {phase} | {role} | {max(counts)} | {statistics.median(rss):.0f} "
                    f"| {max(rss):.0f} | {statistics.median(pss):.0f} |"
                )
            samples_per_role = [roles[role] for role in roles]
            for index in range(min(len(s) for s in samples_per_role)):
                total_rss.append(sum(s[index][1] for s in samples_per_role))
                total_pss.append(sum(s[index][2] for s in samples_per_role))
            lines.append(
                f"| {phase} | **total** | {sum(max(s[0] for s in r) for r in samples_per_role)} "
                f"| **{statistics.median(total_rss):.0f}** | {max(total_rss):.0f} "
                f"| **{statistics.median(total_pss):.0f}** |"
            )
        return "\n".join(lines)


def sample_repository(work: Path, packages: list[Path] | None = None, name: str = "") -> Path:
    """Packages as a one-commit git repository: by default this checkout's indexing/ and
    search/; else the given package directories (e.g. installed ones)."""
    repo = work / (name or "sample-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in packages or [ROOT / "indexing", ROOT / "search"]:
        shutil.copytree(package, repo / package.name, ignore=ignore)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "HOME": str(work),
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "sample"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    return repo


def installed(name: str) -> Path:
    """The directory of an installed package (found on ``sys.path``, not imported)."""
    for entry in sys.path:
        candidate = Path(entry or ".") / name
        if (candidate / "__init__.py").is_file():
            return candidate
    raise SystemExit(f"{name} is not an installed package")


def measure(stack: Stack, args: argparse.Namespace) -> None:
    started = time.monotonic()
    while not stack.healthy():
        if stack.process.poll() is not None or time.monotonic() - started > 180:
            print(stack.output()[-3000:], file=sys.stderr)
            raise SystemExit("the stack did not become healthy")
        time.sleep(0.5)
    print(f"healthy after {time.monotonic() - started:.1f} s; cores: {os.cpu_count()}")
    token = stack.initial_admin()["token"]
    time.sleep(2)  # let start-up work (the beat's first run) settle
    sampler = Sampler(stack.process.pid, stack.data)
    sampler.run_for("idle", args.seconds, args.interval)
    if args.index or args.installed:
        sources = [*(args.repo or [])]
        for name in args.installed or []:
            sources.append(sample_repository(stack.log.parent, [installed(name)], name))
        if not sources:
            sources.append(sample_repository(stack.log.parent))
        added = []
        for source in sources:
            status, body = stack.call("POST", "/api/repos", {"url": str(source)}, token)
            if status != 202:
                raise SystemExit(f"adding {source} gave {status}: {body}")
            added.append((body["id"], body["job"]["id"]))
        index_started = time.monotonic()
        states: dict[int, str] = {}
        while time.monotonic() - index_started < args.index_timeout:
            sampler.sample("indexing")
            for _, job_id in added:
                _, job = stack.call("GET", f"/api/jobs/{job_id}", token=token)
                states[job_id] = job.get("state", "")
            if all(state in FINISHED for state in states.values()):
                break
            time.sleep(args.interval)
        print(f"indexed in {time.monotonic() - index_started:.1f} s:")
        for repo_id, job_id in added:
            _, repo = stack.call("GET", f"/api/repos/{repo_id}", token=token)
            print(
                f"  {repo.get('name')}: job {states.get(job_id)}, {repo.get('file_count')} files,"
                f" {repo.get('chunk_count')} chunks, {repo.get('vectors')} vectors"
            )
        time.sleep(3)  # a child over its memory cap is replaced after its task
        sampler.run_for("idle after indexing", args.seconds, args.interval)
        status, _ = stack.call("POST", "/api/search", {"query": "where are jobs reaped"}, token)
        print(f"one search: {status}")
        sampler.run_for("idle after a search", args.seconds, args.interval)
    print()
    print(sampler.table())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20, help="length of each idle phase")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--index", action="store_true", help="add a small local repository")
    parser.add_argument(
        "--repo", type=Path, action="append", help="a local git repository to add (repeatable)"
    )
    parser.add_argument(
        "--installed",
        nargs="+",
        metavar="PACKAGE",
        help="index these installed packages, each as a repository of its own (e.g. celery kombu"
        " dulwich rest_framework: four repositories of a few thousand chunks)",
    )
    parser.add_argument("--index-timeout", type=float, default=900)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="reposearch-footprint-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        REPO_SEARCH_DATA_DIR=str(work / "data"),
        REPO_SEARCH_BIND_ADDR=f"127.0.0.1:{free_port()}",
        REPO_SEARCH_PG_PORT=str(free_port()),
        REPO_SEARCH_REDIS_PORT=str(free_port()),
        REPO_SEARCH_ALLOW_LOCAL_PATHS="1",
        LLM_PROVIDER=env.get("LLM_PROVIDER", "none"),
    )
    try:
        with make_up(work, env, ready=False) as stack:
            measure(stack, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
