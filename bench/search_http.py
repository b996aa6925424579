"""Hybrid searches per second over HTTP with concurrent clients: the real server, token auth.

    .venv/bin/python bench/search_http.py [--clients 8,50] [--seconds 30,60] [--workers 1]
        [--fresh-queries] [--json bench/results/search-http.json]

Starts ``uvicorn reposearch.asgi:application`` (the command ``make up`` runs; ``--workers``
processes, default one as ``make up`` starts on 2 cores) on the benchmark database
(``bench_db``: the synthetic corpus, or whatever it holds) with a throwaway Redis and the
per-user search rate limit lifted (``REPO_SEARCH_THROTTLE_SEARCH``, unless set), makes one
user with a read token per client, and has each client thread post the README's call
``POST /api/search {"query": ...}`` (hybrid: full text + vectors, no LLM stages) in a loop over
the latency benchmark's 26 queries, on its own keep-alive connection. One phase per
``--clients`` value, each for the matching ``--seconds``; every query is run once first (warm:
model loaded, query embeddings cached -- ``--fresh-queries`` appends a counter word to every
query so none is ever cached). Reports searches/s, latency p50/p95/max as the clients saw
it, and errors (any status but 200, or a failed connection) by kind.

The machine may be shared, so a rate over HTTP follows its load. Each phase therefore also
reports the load average and the **CPU time per search**: the server's (the uvicorn process
and its workers) and the database's (every process of the PostgreSQL cluster: the postmaster's
children alive at the end plus the CPU of those it reaped, ``cutime``), each as the change
over the phase divided by the searches answered, and the clients' own (this process). ``2
cores / (server + database CPU per search)`` is the rate the code can reach on two cores it
does not share with anything else, clients excluded (``bound_per_s``; ``--cores`` changes 2).
The database figure counts the whole cluster, so it is only fair on a cluster nothing else uses
(the benchmark's own); it is left out when the cluster's processes cannot be read (a remote
``BENCH_DATABASE_URL``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from bench_db import ROOT, _free_port, bench_database
from search_latency import QUERIES

QUERY_LIST = [q for group in QUERIES.values() for q in group]


def make_tokens(count: int) -> list[str]:
    from django.contrib.auth import get_user_model

    from accounts.tokens import create_token

    users = get_user_model()
    tokens = []
    for number in range(count):
        user, _created = users.objects.get_or_create(username=f"bench-client-{number:02d}")
        tokens.append(create_token(user, f"bench {time.time():.0f}", "read").secret)
    return tokens


def start_server(port: int, workers: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "uvicorn", "reposearch.asgi:application",
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
        "--lifespan", "on", "--no-proxy-headers", "--log-level", "warning",
    ]  # fmt: skip
    # The server's capacity is measured, not the per-user rate limit (240 searches a minute by
    # default: one client at 6/s passes it within a minute, and its token serves the next phase).
    environment = {"REPO_SEARCH_THROTTLE_SEARCH": "1000000/min", **os.environ}
    server = subprocess.Popen(command, cwd=ROOT, env=environment)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/health")
            connection.getresponse().read()
            return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit("the server did not answer within 120 s")


class Client(threading.Thread):
    def __init__(self, port: int, token: str, offset: int, until: float, fresh: bool) -> None:
        super().__init__(daemon=True)
        self.port, self.token, self.offset, self.until, self.fresh = (
            port,
            token,
            offset,
            until,
            fresh,
        )
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def post(self, query: str) -> None:
        """One search; its latency or its error recorded."""
        if self.connection is None:
            self.connection = self._connect()
        body = json.dumps({"query": query, "limit": 10})
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started = time.perf_counter()
        try:
            self.connection.request("POST", "/api/search", body=body, headers=headers)
            response = self.connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException) as error:
            kind = type(error).__name__
            self.errors[kind] = self.errors.get(kind, 0) + 1
            self.connection.close()
            self.connection = None
            return
        if response.status == 200:
            self.latencies.append((time.perf_counter() - started) * 1000)
        else:
            kind = f"HTTP {response.status}"
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def run(self) -> None:
        number = self.offset
        while time.monotonic() < self.until:
            query = QUERY_LIST[number % len(QUERY_LIST)]
            if self.fresh:
                query = f"{query} v{self.offset}x{number}"
            number += 1
            self.post(query)
        if self.connection is not None:
            self.connection.close()


def process_tree_cpu(pid: int | None) -> float | None:
    """CPU seconds of a process, of the children it reaped and of its live descendants."""
    if pid is None:
        return None
    try:
        root = psutil.Process(pid)
        total = sum(root.cpu_times()[:4])  # user, system, children_user, children_system
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += sum(child.cpu_times()[:2])
    except psutil.Error:
        return None
    return total


def postmaster_pid() -> int | None:
    """The PostgreSQL cluster's postmaster, when it runs on this machine (the parent of our
    backend); None for a remote server."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    try:
        process = psutil.Process(backend)
        parent = process.ppid()
        if "postgres" not in " ".join(psutil.Process(parent).cmdline() or [process.name()]):
            return None
    except psutil.Error:
        return None
    return parent


class CpuMeter:
    """CPU seconds of the server, the database cluster and this process over one phase."""

    def __init__(self, server_pid: int, database_pid: int | None) -> None:
        self.pids = {"server": server_pid, "database": database_pid}
        self.start = self._read()

    def _read(self) -> dict[str, float | None]:
        readings = {name: process_tree_cpu(pid) for name, pid in self.pids.items()}
        readings["clients"] = sum(psutil.Process().cpu_times()[:2])
        return readings

    def per_search(self, searches: int) -> dict[str, float | None]:
        end = self._read()
        result: dict[str, float | None] = {}
        for name, before in self.start.items():
            after = end[name]
            result[name] = (
                None
                if before is None or after is None or not searches
                else round((after - before) / searches * 1000, 2)
            )
        return result


def phase(
    port: int,
    tokens: list[str],
    clients: int,
    seconds: float,
    fresh: bool,
    meter_pids: tuple[int, int | None] | None = None,
    cores: float = 2.0,
) -> dict[str, Any]:
    until = time.monotonic() + seconds
    meter = CpuMeter(*meter_pids) if meter_pids else None
    load_before = os.getloadavg()
    started = time.monotonic()
    threads = [Client(port, tokens[i], i * 7, until, fresh) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    latencies = sorted(x for t in threads for x in t.latencies)
    errors: dict[str, int] = {}
    for thread in threads:
        for kind, count in thread.errors.items():
            errors[kind] = errors.get(kind, 0) + count

    def pct(p: float) -> float:
        return (
            round(latencies[min(len(latencies) - 1, int(len(latencies) * p))], 1)
            if latencies
            else 0.0
        )

    result = {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "searches": len(latencies),
        "searches_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "max_ms": round(latencies[-1], 1) if latencies else 0.0,
        "errors": errors,
        "error_count": sum(errors.values()),
        "load_average": [round(x, 1) for x in (*load_before, *os.getloadavg())],
    }
    cpu_note = ""
    if meter is not None:
        cpu = meter.per_search(len(latencies))
        result["cpu_ms_per_search"] = cpu
        spent = [cpu[name] for name in ("server", "database")]
        if all(x is not None and x > 0 for x in spent):
            per_search_s = sum(x for x in spent if x is not None) / 1000
            result["bound_per_s"] = round(cores / per_search_s, 1)
        cpu_note = (
            f"\n      CPU per search: server {cpu['server']} ms, database {cpu['database']} ms,"
            f" clients {cpu['clients']} ms -> {result.get('bound_per_s', '?')} searches/s on"
            f" {cores:g} unshared cores; load {result['load_average'][0]} ->"
            f" {result['load_average'][3]}"
        )
    print(
        f"  {clients:3d} clients x {result['seconds']} s: {result['searches_per_s']} searches/s,"
        f" p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms,"
        f" errors {result['error_count']} {errors or ''}{cpu_note}",
        flush=True,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="8,50")
    parser.add_argument("--seconds", default="30,60")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--fresh-queries", action="store_true")
    parser.add_argument("--cores", type=float, default=2.0, help="for the CPU-bound rate")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/search-http.json")
    args = parser.parse_args(argv)
    clients = [int(x) for x in args.clients.split(",")]
    seconds = [float(x) for x in args.seconds.split(",")]
    if len(seconds) != len(clients):
        parser.error("--seconds needs one value per --clients value")
    with bench_database(with_redis=True):
        from django.conf import settings
        from django.db import connections

        from indexing.models import Chunk, Repository

        report: dict[str, Any] = {
            "chunks": Chunk.objects.count(),
            "repositories": Repository.objects.count(),
            "workers": args.workers,
            "fresh_queries": args.fresh_queries,
            "db_pool": settings.DATABASES["default"]["OPTIONS"].get("pool"),
            "phases": [],
        }
        tokens = make_tokens(max(clients))
        database_pid = postmaster_pid()
        connections.close_all()
        port = _free_port()
        print(
            f"{report['chunks']} chunks in {report['repositories']} repositories;"
            f" uvicorn with {args.workers} worker(s) on port {port}; pool {report['db_pool']}",
            flush=True,
        )
        server = start_server(port, args.workers)
        try:
            warm = Client(port, tokens[0], 0, 0.0, False)
            for query in QUERY_LIST:  # every query once: model loaded, query embeddings cached
                warm.post(query)
            if warm.errors:
                raise SystemExit(f"warm-up failed: {warm.errors}")
            for count, duration in zip(clients, seconds, strict=True):
                report["phases"].append(
                    phase(
                        port,
                        tokens,
                        count,
                        duration,
                        args.fresh_queries,
                        (server.pid, database_pid),
                        args.cores,
                    )
                )
        finally:
            server.terminate()
            server.wait(30)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
