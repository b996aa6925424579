"""Fetch the pinned evaluation corpus from PyPI and turn it into a local git repository.

    .venv/bin/python bench/eval/fetch_corpus.py                 # flask 3.0.3 -> bench/corpora/flask-3.0.3
    .venv/bin/python bench/eval/fetch_corpus.py --check bench/eval/flask-queries.json

The sdist is downloaded with pip (``--no-binary :all:``), its sha256 checked against the pin
below, unpacked, and committed once with a fixed author and date, so every machine gets the
same tree and the same commit id. The code itself is never committed to reposearch.
``--check`` verifies every expected line range of a query file against the tree (the range
exists and contains the named symbol); it exits non-zero when one does not.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from search.evaluation_queries import check_query_set, load_query_set  # noqa: E402

PINNED = {
    "flask": ("3.0.3", "ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842"),
}
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "reposearch eval",
    "GIT_AUTHOR_EMAIL": "eval@reposearch.invalid",
    "GIT_COMMITTER_NAME": "reposearch eval",
    "GIT_COMMITTER_EMAIL": "eval@reposearch.invalid",
    "GIT_AUTHOR_DATE": "2024-04-07T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-04-07T00:00:00+00:00",
}


def corpus_dir(package: str = "flask") -> Path:
    version, _sha = PINNED[package]
    return ROOT / "bench" / "corpora" / f"{package}-{version}"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **COMMIT_ENV}
    result = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return result.stdout.strip()


def download_sdist(package: str, workdir: Path) -> Path:
    version, sha256 = PINNED[package]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{package}=={version}",
            "-d",
            str(workdir),
        ],
        check=True,
    )
    archives = list(workdir.glob(f"{package}-{version}.tar.gz"))
    if len(archives) != 1:
        raise SystemExit(f"pip did not produce {package}-{version}.tar.gz in {workdir}")
    digest = hashlib.sha256(archives[0].read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"sha256 mismatch for {archives[0].name}: {digest} != pinned {sha256}")
    return archives[0]


def build_repository(package: str, dest: Path) -> str:
    """Unpack the pinned sdist into ``dest`` as a one-commit git repository; return the commit."""
    with tempfile.TemporaryDirectory(prefix="reposearch-corpus-") as tmp:
        archive = download_sdist(package, Path(tmp))
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "x", filter="data")
        (top,) = list((Path(tmp) / "x").iterdir())
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(top), dest)
    _git(dest, "init", "--quiet", "--initial-branch=main")
    _git(dest, "add", "--all", "--force")
    _git(dest, "commit", "--quiet", "--no-gpg-sign", "-m", f"{package} {PINNED[package][0]}")
    return _git(dest, "rev-parse", "HEAD")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="flask", choices=sorted(PINNED))
    parser.add_argument("--dest", type=Path, help="default: bench/corpora/<package>-<version>")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    parser.add_argument("--check", type=Path, help="a query file to verify against the tree")
    args = parser.parse_args(argv)
    dest = args.dest or corpus_dir(args.package)
    if args.force or not (dest / ".git").exists():
        commit = build_repository(args.package, dest)
        print(f"built {dest} at commit {commit}")
    else:
        print(f"{dest} exists at commit {_git(dest, 'rev-parse', 'HEAD')} (use --force to rebuild)")
    if args.check:
        query_set = load_query_set(args.check)
        problems = check_query_set(dest, query_set)
        for problem in problems:
            print(f"BAD  {problem}")
        total = sum(len(q.expected) for q in query_set.queries)
        print(
            f"{len(query_set.queries)} queries, {total} expected ranges, {len(problems)} problems"
        )
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
