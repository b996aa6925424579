"""Benchmark: our single-branch shallow fetch vs `git clone --depth 1` on Django's source.

Builds a local git repository from real third-party code (the Django package installed
in this virtualenv, or a directory given with --source), serves it over smart HTTP with
dulwich's server on 127.0.0.1, then times, against the same URL:

  * `fetch_branch` (indexing.git.fetch): depth 1, one branch, byte cap and deadline;
  * `git clone --depth 1 --bare` and `git clone --depth 1` (system git);
  * `dulwich.porcelain.clone(depth=1)` for reference (fetches every branch and tag tip);

and the tree listing of the fetched commit with sizes from pack headers vs inflating
every blob. Bytes are counted by the server (response bodies), the same for every client.
The server runs in its own process so that it does not share our interpreter's GIL.

Besides `main`, the repository has N branches and N tags, and a `vendor-import` branch
(plus tags) holding another package's source, as real repositories have: a client that
fetches every tip pays for them, a single-branch fetch does not.

    .venv/bin/python bench/clone_benchmark.py [--source DIR] [--branches N] [--runs N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "indexing")]

from dulwich import porcelain  # noqa: E402
from dulwich.repo import Repo  # noqa: E402

from indexing.git.fetch import fetch_branch, fetch_update  # noqa: E402
from indexing.git.tree import GitTreeReader  # noqa: E402

try:
    from tests.indexing.git_server import GitHttpServer
except ImportError:
    from git_server import GitHttpServer

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(*args: str, cwd: Path | None = None, home: Path) -> None:
    env = dict(GIT_ENV, HOME=str(home))
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def default_source() -> Path:
    import django

    return Path(django.__file__).parent


def other_source() -> Path | None:
    import pip

    return Path(pip.__file__).parent


def build_repository(source: Path, work: Path, branches: int, other: Path | None) -> Path:
    """A bare repo: commit 1 = source tree; commit 2 = a small edit; N extra branches."""
    tree = work / "tree"
    ignore = shutil.ignore_patterns("__pycache__")
    git("init", "-q", "-b", "main", str(tree), home=work)
    if other is not None:
        git("checkout", "-q", "--orphan", "vendor-import", cwd=tree, home=work)
        shutil.copytree(other, tree / other.name, ignore=ignore)
        git("add", "-A", cwd=tree, home=work)
        git("commit", "-q", "-m", "vendor import", cwd=tree, home=work)
        git("tag", "vendor-1.0", cwd=tree, home=work)
        git("checkout", "-q", "--orphan", "main", cwd=tree, home=work)
        git("rm", "-rq", "--cached", ".", cwd=tree, home=work)
        shutil.rmtree(tree / other.name)
    shutil.copytree(source, tree / source.name, ignore=ignore)
    git("add", "-A", cwd=tree, home=work)
    git("commit", "-q", "-m", "import source", cwd=tree, home=work)
    for number in range(branches):
        git("branch", f"feature/{number:03d}", cwd=tree, home=work)
        git("tag", f"v0.{number}", cwd=tree, home=work)
    first_file = next(p for p in sorted((tree / source.name).rglob("*.py")) if p.stat().st_size)
    with first_file.open("a") as handle:
        handle.write("\n# edited for the benchmark\n")
    git("commit", "-q", "-am", "small edit", cwd=tree, home=work)
    bare = work / "source.git"
    git("clone", "-q", "--bare", str(tree), str(bare), home=work)
    git("repack", "-a", "-d", "-q", cwd=bare, home=work)
    return bare


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def serve(bare: str, connection) -> None:
    """Child process: serve `bare` and answer "bytes" / "stop" on the pipe."""
    with GitHttpServer({"bench/django.git": Repo(bare)}) as server:
        connection.send(server.url("bench/django.git"))
        while (command := connection.recv()) != "stop":
            assert command == "bytes"
            connection.send(server.bytes_sent)


class ServerProcess:
    def __init__(self, bare: Path) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._process = multiprocessing.Process(target=serve, args=(str(bare), child))

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.url = self._conn.recv()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._conn.send("stop")
        self._process.join(10)

    @property
    def bytes_sent(self) -> int:
        self._conn.send("bytes")
        return self._conn.recv()


def timed(server: ServerProcess, action) -> tuple[float, int]:
    before = server.bytes_sent
    started = time.perf_counter()
    action()
    return time.perf_counter() - started, server.bytes_sent - before


def measure_update(url: str, work: Path, name: str) -> str:
    """Fetch feature/000 (= the commit before main's one-line edit), then update to main."""
    target = work / f"update-{name}"
    first = fetch_branch(
        url, target, branch="feature/000", max_bytes=500 * 1024 * 1024, timeout_s=300,
        allow_private_hosts=True,
    )  # fmt: skip
    with Repo(str(target)) as repo:
        repo.refs[b"refs/heads/main"] = first.commit_sha.encode()  # type: ignore[index]
    update = fetch_update(
        target, url, "main", max_bytes=500 * 1024 * 1024, timeout_s=300, allow_private_hosts=True
    )
    with GitTreeReader(target) as reader:
        changed = reader.diff(first.commit_sha, update.commit_sha).changed_paths
    shutil.rmtree(target, ignore_errors=True)
    return (
        f"  {name:28} {update.seconds:6.2f} s {update.bytes_received / 1e3:10.1f} kB "
        f"({len(changed)} changed path)"
    )


class GitDaemon:
    """`git daemon` serving the benchmark repository over git:// (a real git server)."""

    def __init__(self, base: Path) -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._process = subprocess.Popen(
            ["git", "daemon", "--export-all", f"--base-path={base}", "--listen=127.0.0.1",
             f"--port={self.port}", "--reuseaddr", str(base)],
            env=dict(GIT_ENV, HOME=str(base)), stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None, help="directory to commit")
    parser.add_argument("--branches", type=int, default=100, help="extra branches and tags")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-vendor-branch", action="store_true")
    args = parser.parse_args()
    source = args.source or default_source()
    other = None if args.no_vendor_branch else other_source()

    with tempfile.TemporaryDirectory(prefix="clone-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        bare = build_repository(source, work, args.branches, other)
        files = sum(1 for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        print(f"source: {source} ({files} files), {args.branches} extra branches + tags")
        if other is not None:
            print(f"plus a 'vendor-import' branch and tag with {other}")
        print(f"built test repository in {time.perf_counter() - started:.1f} s, "
              f"packed size {dir_size(bare / 'objects') / 1e6:.1f} MB")  # fmt: skip

        results: dict[str, list[tuple[float, int, int]]] = {}
        with ServerProcess(bare) as server:
            url = server.url

            def run(name: str, action, target: Path) -> None:
                seconds, sent = timed(server, action)
                results.setdefault(name, []).append((seconds, sent, dir_size(target)))
                shutil.rmtree(target, ignore_errors=True)

            for attempt in range(args.runs):
                ours = work / f"ours{attempt}"
                run(
                    "reposearch fetch_branch (depth 1)",
                    lambda ours=ours: fetch_branch(
                        url, ours, max_bytes=500 * 1024 * 1024, timeout_s=300,
                        allow_private_hosts=True,
                    ),
                    ours,
                )  # fmt: skip
                for label, extra in (("--bare", ["--bare"]), ("", [])):
                    target = work / f"git{attempt}{label}"
                    run(
                        f"git clone --depth 1 {label}".strip(),
                        lambda target=target, extra=extra: git(
                            "clone", "-q", "--depth", "1", *extra, url, str(target), home=work
                        ),
                        target,
                    )
            porcelain_target = work / "porcelain"
            with open(os.devnull, "wb") as quiet:
                run(
                    "dulwich porcelain.clone(depth=1)",
                    lambda: porcelain.clone(
                        url, str(porcelain_target), bare=True, depth=1, errstream=quiet
                    ),
                    porcelain_target,
                )

            updates = [measure_update(url, work, "dulwich smart HTTP server")]
            daemon = GitDaemon(work)
            try:
                daemon_url = f"git://127.0.0.1:{daemon.port}/{bare.name}"
                updates.append(measure_update(daemon_url, work, "git daemon (git://)"))
            finally:
                daemon.close()

            reader_target = work / "reader"
            fetched = fetch_branch(
                url, reader_target, max_bytes=500 * 1024 * 1024, timeout_s=300,
                allow_private_hosts=True,
            )  # fmt: skip

        print(f"\n{'client':40} {'seconds (best/median)':>22} {'MB sent':>9} {'MB on disk':>11}")
        for name, runs in results.items():
            times = sorted(r[0] for r in runs)
            median = times[len(times) // 2]
            print(f"{name:40} {times[0]:>10.2f} / {median:<9.2f} "
                  f"{runs[0][1] / 1e6:>9.1f} {runs[0][2] / 1e6:>11.1f}")  # fmt: skip

        print("\nincremental fetch_update after a one-line edit (depth 1):")
        print("\n".join(updates))

        def best_of(action, repeat: int = 3) -> float:
            best = float("inf")
            for _ in range(repeat):
                with GitTreeReader(reader_target) as reader:
                    started = time.perf_counter()
                    action(reader)
                    best = min(best, time.perf_counter() - started)
            return best

        with GitTreeReader(reader_target) as reader:
            entries = reader.list_tree(fetched.commit_sha)
        with_sizes = best_of(lambda r: r.list_tree(fetched.commit_sha))
        inflating = best_of(
            lambda r: [len(r.read_blob(e.sha)) for e in r.list_tree(fetched.commit_sha)]
        )
        header_total = sum(e.size for e in entries)
        print(
            f"\nlist_tree: {len(entries)} entries, {header_total / 1e6:.1f} MB of blobs (best of 3)"
        )
        print(f"  tree walk + sizes from pack headers: {with_sizes:.3f} s")
        print(f"  tree walk + inflating every blob:    {inflating:.3f} s")


if __name__ == "__main__":
    main()
