"""Several hosts on one machine: Linux network namespaces joined by veth pairs.

- **db** (10.213.7.1): PostgreSQL, Redis, the git server and Celery beat (the reaper), each
  listening on the host's own address inside its namespace;
- **w1**, **w2** (10.213.7.11, .12): a real Celery worker each, reaching the db host over its
  veth link only (the db host's namespace holds a bridge, the "switch").

Nothing gets an address outside these namespaces and no namespace has a default route, so no
packet can leave the machine. The test process stands in for an operator logged into the db host:
it reads the database and Redis through their Unix sockets (file system paths work across network
namespaces) and runs ``manage.py`` inside the db namespace. A host can be killed outright (every
process in its namespace) or cut off (its switch port set down). ``close`` removes every
namespace (their veths go with them), also after a failure.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from reposearch.embedded_services import EmbeddedPostgres, EmbeddedRedis, free_port
from reposearch.processes import worker_command
from tests.fault_stack import WatchesJobs

ROOT = Path(__file__).resolve().parent.parent
FINISHED = {"done", "completed_with_errors", "failed", "cancelled"}
SUBNET = "10.213.7"
DB_ADDRESS = f"{SUBNET}.1"
WORKER_ADDRESSES = {"w1": f"{SUBNET}.11", "w2": f"{SUBNET}.12"}


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def namespaces_refused() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    probe = f"rs-probe-{os.getpid()}"
    result = _ip("netns", "add", probe)
    if result.returncode != 0:
        return (result.stderr or result.stdout).strip() or "ip netns add failed"
    try:
        veth = _ip("link", "add", "name", "rsprobe0", "netns", probe, "type", "veth", "peer",
                   "name", "rsprobe1", "netns", probe)  # fmt: skip
        if veth.returncode != 0:
            return (veth.stderr or veth.stdout).strip() or "veth pairs refused"
    finally:
        _ip("netns", "del", probe)
    return None


class Host:
    """One network namespace standing for a machine."""

    def __init__(self, name: str, namespace: str, address: str) -> None:
        self.name, self.namespace, self.address = name, namespace, address

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.namespace]

    def pids(self) -> list[int]:
        result = _ip("netns", "pids", self.namespace)
        return [int(pid) for pid in result.stdout.split()]

    def kill_everything(self) -> int:
        """SIGKILL every process in the namespace (the machine loses power); returns how many."""
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        return len(pids)


class _NamespacedPostgres(EmbeddedPostgres):
    """The embedded PostgreSQL started inside the db namespace, on its address."""

    def __init__(self, root: Path, port: int, host: Host) -> None:
        super().__init__(root, port)
        self.host = host

    def _url(self, user: str, password: str, database: str) -> str:  # the operator's: the socket
        return f"postgresql://{user}:{password}@/{database}?host={self.pgdata}&port={self.port}"

    def tcp_url(self) -> str:  # the other hosts' way in, with the application role's password
        password = self._creds().pg_app_password
        return f"postgresql://reposearch:{password}@{self.host.address}:{self.port}/reposearch"

    def start(self) -> None:
        super().start()
        hba = self.pgdata / "pg_hba.conf"
        rule = f"host all all {SUBNET}.0/24 scram-sha-256\n"
        if rule not in hba.read_text():
            with open(hba, "a") as rules:
                rules.write(rule)
            self._run("pg_ctl", "-D", str(self.pgdata), "reload")

    def _run(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if "-o" in command:  # listen on the host's address, not on its loopback
            at = command.index("-o") + 1
            command[at] = command[at].replace("-h 127.0.0.1", f"-h {self.host.address}")
        user: list[str] = []
        if self.run_as is not None:
            entry = pwd.getpwnam(self.run_as)
            user = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                    "--clear-groups"]  # fmt: skip
        return subprocess.run(
            [*self.host.prefix(), *user, str(self.bin / command[0]), *command[1:]],
            check=check, capture_output=True, text=True, input=stdin, cwd="/", timeout=120,
        )  # fmt: skip


class NetnsLab(WatchesJobs):
    def __init__(self, root: Path) -> None:
        self.root = root
        tag = f"{os.getpid() % 100000}"
        self.db = Host("db", f"reposearch-{tag}-db", DB_ADDRESS)
        self.workers = {
            name: Host(name, f"reposearch-{tag}-{name}", address)
            for name, address in WORKER_ADDRESSES.items()
        }
        self.others: dict[str, Host] = {}  # hosts of other roles (``add_host``)
        self.tag = tag
        # PostgreSQL runs as an unprivileged user that must reach its data directory, so it lives
        # outside pytest's /tmp/pytest-of-<user> (as the fault stack's): any other pytest session
        # of the same user sets that directory back to 0700 when it starts.
        self.private_root = Path(tempfile.mkdtemp(prefix="reposearch-netns-pg-"))
        self.postgres = _NamespacedPostgres(self.private_root / "pg", free_port(), self.db)
        self.redis_port = free_port()
        self.redis_socket = root / "redis" / "redis.sock"
        self.redis_password = secrets.token_urlsafe(24)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.git_port = 0
        self.env = dict(os.environ)
        self.env.update(
            DATABASE_URL=self.postgres.tcp_url(),
            REDIS_URL=f"redis://:{self.redis_password}@{DB_ADDRESS}:{self.redis_port}/0",
            DJANGO_SETTINGS_MODULE="reposearch.settings.test",
            REPO_SEARCH_DATA_DIR=str(root / "data"),  # one shared volume, as compose mounts it
            REPO_SEARCH_ALLOW_LOCAL_PATHS="1",
            REPO_SEARCH_ALLOW_PRIVATE_HOSTS="1",
            REPO_SEARCH_JOB_STALE_SECS="40",
        )

    # --- the network -----------------------------------------------------------------------------
    def add_host(self, name: str, address: str) -> Host:
        """One more host on the switch (before ``build_network``), e.g. a replica or web host."""
        host = Host(name, f"reposearch-{self.tag}-{name}", address)
        self.others[name] = host
        return host

    @property
    def hosts(self) -> dict[str, Host]:
        """Every host but the db host, which holds the switch."""
        return {**self.workers, **self.others}

    @property
    def ports(self) -> dict[str, str]:
        """Each host's veth on the db side (the switch port its cable is plugged into)."""
        return {name: f"rs{self.tag}{name}" for name in self.hosts}

    def _check(self, *args: str) -> None:
        result = _ip(*args)
        if result.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")

    def build_network(self) -> None:
        for host in (self.db, *self.hosts.values()):
            self._check("netns", "add", host.namespace)
            self._check("-n", host.namespace, "link", "set", "lo", "up")
        self._check("-n", self.db.namespace, "link", "add", "switch", "type", "bridge")
        self._check("-n", self.db.namespace, "addr", "add", f"{DB_ADDRESS}/24", "dev", "switch")
        self._check("-n", self.db.namespace, "link", "set", "switch", "up")
        for name, host in self.hosts.items():
            port = self.ports[name]
            self._check("link", "add", "name", "eth0", "netns", host.namespace, "type", "veth",
                        "peer", "name", port, "netns", self.db.namespace)  # fmt: skip
            self._check("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            self._check("-n", host.namespace, "link", "set", "eth0", "up")
            self._check("-n", self.db.namespace, "link", "set", port, "master", "switch", "up")

    def cut_link(self, name: str) -> None:
        """Unplug the host's cable at the switch: its packets go nowhere, nothing is refused."""
        self._check("-n", self.db.namespace, "link", "set", self.ports[name], "down")

    def restore_link(self, name: str) -> None:
        self._check("-n", self.db.namespace, "link", "set", self.ports[name], "up")

    # --- the servers -------------------------------------------------------------------------
    def _spawn(
        self, host: Host, command: list[str], log: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with open(log, "ab") as output:
            process = subprocess.Popen(
                [*host.prefix(), *command], cwd=ROOT, env=env or self.env, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def start_servers(self, repositories: dict[str, Path]) -> None:
        self.postgres.start()
        self.redis_socket.parent.mkdir(parents=True, exist_ok=True)
        config = self.redis_socket.parent / "redis.conf"  # the password stays out of `ps`
        config.touch(mode=0o600)
        config.write_text(f"requirepass {self.redis_password}\n")
        self._spawn(self.db, [
            EmbeddedRedis.binary(), str(config), "--port", str(self.redis_port), "--bind",
            DB_ADDRESS, "--unixsocket", str(self.redis_socket), "--unixsocketperm", "700",
            "--save", "", "--appendonly", "no", "--dir", str(self.redis_socket.parent),
        ], self.root / "redis.log")  # fmt: skip
        self._wait(lambda: self._redis_answers(), 30, "Redis")
        git_log = self.root / "git.log"
        pairs = [f"{name}={path}" for name, path in repositories.items()]
        self._spawn(self.db, [sys.executable, "-m", "tests.serve_git", DB_ADDRESS, *pairs], git_log)
        self._wait(lambda: "serving" in git_log.read_text(), 60, "the git server")
        self.git_port = int(git_log.read_text().split("serving", 1)[1].split()[0])
        self.manage("migrate", "-v0")
        beat = ["celery", "-A", "reposearch", "beat", "-s", str(self.root / "beat-schedule")]
        # The reaper every 10 s, not 60 (tests/settings_quick_reaper.py): a dead host's job is
        # resumed once silent for REPO_SEARCH_JOB_STALE_SECS, without waiting for the next minute.
        beat_env = dict(self.env, DJANGO_SETTINGS_MODULE="tests.settings_quick_reaper")
        self._spawn(self.db, [sys.executable, "-m", *beat], self.root / "beat.log", beat_env)

    def _redis_answers(self) -> bool:
        try:
            return bool(self.redis().ping())
        except redis.RedisError:
            return False

    def redis(self) -> redis.Redis:
        return redis.Redis(
            unix_socket_path=str(self.redis_socket), password=self.redis_password, socket_timeout=5
        )

    def log_path(self, name: str) -> Path:
        return self.root / f"worker-{name}.log"

    def start_worker(self, name: str) -> None:
        command = worker_command(
            concurrency=1, name=f"{name}@netns", program=(sys.executable, "-m", "celery")
        )
        log = self.log_path(name)
        offset = log.stat().st_size if log.exists() else 0
        process = self._spawn(self.workers[name], command, log)
        self._wait(
            lambda: process.poll() is not None or " ready." in log.read_text()[offset:],
            120,
            f"worker {name}",
        )
        if process.poll() is not None:
            raise RuntimeError(f"worker {name} exited: {self.log_tail(name)}")

    def git_url(self, name: str) -> str:
        return f"http://{DB_ADDRESS}:{self.git_port}/{name}"

    @staticmethod
    def _wait(predicate: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not come up in {seconds} s")
            time.sleep(0.2)

    def log_tail(self, name: str, characters: int = 3000) -> str:
        path = self.log_path(name)
        return path.read_text(errors="replace")[-characters:] if path.exists() else ""

    def task_outcomes(self, task_id: str) -> tuple[int, list[str]]:
        """How many times any worker host received the task, and each delivery's outcome line.

        Celery logs one line per delivery when it ends (``celery.app.trace``): ``succeeded``,
        ``raised ...``, ``retry: ...`` (sent again: another delivery follows, on any host) or
        the reason it was rejected (a retry that could not be sent is dropped).
        """
        received, outcomes = 0, []
        for name in self.workers:
            for line in self.log_tail(name, 10_000_000).splitlines():
                if f"[{task_id}] received" in line:
                    received += 1
                elif f"[{task_id}] " in line and "celery.app.trace" in line:
                    outcomes.append(f"{name}: {line.split(f'[{task_id}] ', 1)[1][:200]}")
        return received, outcomes

    def close(self) -> None:
        for host in (*self.hosts.values(), self.db):
            host.kill_everything()  # PostgreSQL too: the data directory is thrown away
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        for host in (*self.hosts.values(), self.db):
            _ip("netns", "del", host.namespace)
        shutil.rmtree(self.private_root, ignore_errors=True)

    # --- driving it (the operator on the db host) --------------------------------------------
    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [*self.db.prefix(), sys.executable, "manage.py", *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def add_repositories(self, urls: list[str]) -> list[int]:
        code = (
            "from indexing.services.repositories import add_repository\n"
            f"for url in {urls!r}: print(add_repository(url).pk)"
        )
        return [int(line) for line in self.manage("shell", "-c", code).split()[-len(urls) :]]

    def wait_for(self, job_ids: list[int], predicate: Any, seconds: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + seconds
        while True:
            jobs = [self.job(job_id) for job_id in job_ids]
            if all([predicate(job) for job in jobs]):  # each job seen, every time
                return jobs
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n}:\n{self.log_tail(n)}" for n in self.workers)
                raise AssertionError(f"jobs: {jobs}\n{logs}")
            time.sleep(0.2)

    def ran_on(self, job: dict[str, Any]) -> str | None:
        """The worker host whose log shows the job's current task running."""
        task_id = job["celery_task_id"]
        for name in self.workers:
            path = self.log_path(name)
            if task_id and path.exists() and f"[{task_id}] received" in path.read_text():
                return name
        return None


@contextmanager
def netns_lab(
    root: Path, repositories: dict[str, Path], lab: NetnsLab | None = None
) -> Iterator[NetnsLab]:
    """``lab`` (a ``NetnsLab`` by default) with its network and servers up, closed after."""
    lab = lab or NetnsLab(root)
    try:
        lab.build_network()
        lab.start_servers(repositories)
        yield lab
    finally:
        lab.close()
