"""Fetch the pinned evaluation corpora and turn each into a local one-commit git repository.

    .venv/bin/python bench/eval/fetch_corpus.py                    # flask 3.0.3 (as before)
    .venv/bin/python bench/eval/fetch_corpus.py --all              # every corpus of the manifest
    .venv/bin/python bench/eval/fetch_corpus.py --name gorilla-mux-1.8.0
    .venv/bin/python bench/eval/fetch_corpus.py --all --check      # fetch, then verify the queries
    .venv/bin/python bench/eval/fetch_corpus.py --check bench/eval/flask-queries.json

The corpora are listed in ``bench/eval/corpora.json`` (format: ``bench/eval/harness/corpora.py``).
Each archive is downloaded with the registry's ordinary client (``pip download --no-binary
:all:``, ``npm pack``, ``apt-get download``), its sha256 checked against the manifest, unpacked,
the manifest's ``include`` paths copied into ``bench/corpora/<name>``, and committed once with a
fixed author and date, so every machine gets the same tree and the same commit id. The code
itself is never committed to reposearch. ``--check`` verifies every expected line range of the
selected corpora's query files (or of one query file) against the tree (the range exists, starts
at the named definition or contains the named heading); it exits non-zero when one does not.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_db import CORPORA  # noqa: E402  (bench/corpora, or BENCH_CORPORA_DIR)

from bench.eval.harness.corpora import (  # noqa: E402
    Corpus,
    ManifestError,
    load_manifest,
    select_corpora,
)
from bench.eval.harness.queries import check_query_set, load_query_set  # noqa: E402

MANIFEST = ROOT / "bench" / "eval" / "corpora.json"
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "reposearch eval",
    "GIT_AUTHOR_EMAIL": "eval@reposearch.invalid",
    "GIT_COMMITTER_NAME": "reposearch eval",
    "GIT_COMMITTER_EMAIL": "eval@reposearch.invalid",
    "GIT_AUTHOR_DATE": "2024-04-07T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-04-07T00:00:00+00:00",
}


def manifest(path: Path = MANIFEST) -> tuple[Corpus, ...]:
    return load_manifest(path)


def corpus_tree(corpus: Corpus) -> Path:
    """The corpus's git repository: ``corpus.directory(ROOT)``, or under ``BENCH_CORPORA_DIR``
    when it is set, as the benchmarks' caches (``bench_db.CORPORA``; the test suite's smoke runs
    build tiny corpora there)."""
    return CORPORA / corpus.name


def find_corpus(ref: str, corpora: tuple[Corpus, ...] | None = None) -> Corpus:
    """A corpus by name, or by package when only one corpus has it (``flask``)."""
    corpora = corpora if corpora is not None else manifest()
    for corpus in corpora:
        if corpus.name == ref:
            return corpus
    by_package = [corpus for corpus in corpora if corpus.package == ref]
    if len(by_package) == 1:
        return by_package[0]
    raise SystemExit(f"no corpus {ref!r} in the manifest")


def corpus_dir(ref: str = "flask") -> Path:
    return corpus_tree(find_corpus(ref))


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **COMMIT_ENV}
    result = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return result.stdout.strip()


def _only(paths: list[Path], what: str, workdir: Path) -> Path:
    if len(paths) != 1:
        raise SystemExit(f"expected one {what} in {workdir}, found {[p.name for p in paths]}")
    return paths[0]


def download(corpus: Corpus, workdir: Path) -> Path:
    """The corpus's archive, downloaded into ``workdir`` and checked against its sha256."""
    if corpus.source == "pypi":
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        command += ["--no-binary", ":all:", f"{corpus.package}=={corpus.version}", "-d", "."]
        pattern = "*.tar.gz"
    elif corpus.source == "npm":
        command = ["npm", "pack", "--silent", f"{corpus.package}@{corpus.version}"]
        pattern = "*.tgz"
    else:
        command = ["apt-get", "download", "-q", f"{corpus.package}={corpus.version}"]
        pattern = "*.deb"
    try:
        subprocess.run(command, check=True, cwd=workdir, stdout=subprocess.DEVNULL)
    except subprocess.CalledProcessError as error:
        hint = " (run `apt-get update` first?)" if corpus.source == "debian" else ""
        raise SystemExit(
            f"{corpus.name}: {' '.join(command)} failed ({error.returncode}){hint}"
        ) from None
    archive = _only(sorted(workdir.glob(pattern)), pattern, workdir)
    verify_sha256(corpus, archive)
    return archive


def verify_sha256(corpus: Corpus, archive: Path) -> None:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != corpus.sha256:
        raise SystemExit(f"sha256 mismatch for {archive.name}: {digest} != pinned {corpus.sha256}")


def unpack(corpus: Corpus, archive: Path, into: Path) -> Path:
    """Unpack ``archive`` under ``into``; return the directory the ``include`` paths start from."""
    into.mkdir()
    if corpus.source == "debian":
        subprocess.run(["dpkg-deb", "-x", str(archive), str(into)], check=True)
        return into
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    if corpus.include:
        return into
    return _only([p for p in into.iterdir() if p.is_dir()], "top directory", into)


def assemble(corpus: Corpus, base: Path, dest: Path) -> None:
    """Copy the corpus's tree from the unpacked archive at ``base`` to ``dest``."""
    if not corpus.include:
        shutil.move(str(base), dest)
        return
    dest.mkdir(parents=True)
    for source, target in corpus.include:
        origin, goal = base / source, dest / target
        if origin.is_dir():
            shutil.copytree(origin, goal, dirs_exist_ok=True, symlinks=True)
        elif origin.is_file():
            goal.parent.mkdir(parents=True, exist_ok=True)
            if origin.suffix == ".gz" and goal.suffix != ".gz":
                goal.write_bytes(gzip.decompress(origin.read_bytes()))
            else:
                shutil.copy2(origin, goal)
        else:
            raise SystemExit(f"{corpus.name}: the archive has no {source!r}")


def build_repository(corpus: Corpus, dest: Path) -> str:
    """Fetch ``corpus`` into ``dest`` as a one-commit git repository; return the commit."""
    with tempfile.TemporaryDirectory(prefix="reposearch-corpus-") as tmp:
        archive = download(corpus, Path(tmp))
        base = unpack(corpus, archive, Path(tmp) / "x")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        assemble(corpus, base, dest)
    _git(dest, "init", "--quiet", "--initial-branch=main")
    _git(dest, "add", "--all", "--force")
    _git(dest, "commit", "--quiet", "--no-gpg-sign", "-m", f"{corpus.package} {corpus.version}")
    return _git(dest, "rev-parse", "HEAD")


def ensure_fetched(corpus: Corpus, *, force: bool = False, dest: Path | None = None) -> Path:
    dest = dest or corpus_tree(corpus)
    if force or not (dest / ".git").exists():
        commit = build_repository(corpus, dest)
        print(f"built {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest} at {commit}")
    else:
        print(f"{dest} exists at commit {_git(dest, 'rev-parse', 'HEAD')} (--force rebuilds)")
    return dest


def check(tree: Path, query_file: Path) -> int:
    """Print the problems of one query file against ``tree``; return their number."""
    query_set = load_query_set(query_file)
    problems = check_query_set(tree, query_set)
    for problem in problems:
        print(f"BAD  {problem}")
    total = sum(len(q.expected) for q in query_set.queries)
    kinds: dict[str, int] = {}
    for query in query_set.queries:
        kinds[query.kind] = kinds.get(query.kind, 0) + 1
    print(
        f"{query_file.name}: {len(query_set.queries)} queries"
        f" ({', '.join(f'{kind} {n}' for kind, n in sorted(kinds.items()))}),"
        f" {total} expected ranges, {len(problems)} problems"
    )
    return len(problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every corpus of the manifest")
    parser.add_argument("--name", action="append", default=[], help="a corpus name (repeatable)")
    parser.add_argument("--split", choices=("tune", "report"), help="the corpora of one split")
    parser.add_argument("--package", help="a corpus by package name (compatibility: flask)")
    parser.add_argument("--dest", type=Path, help="with one corpus: where to build it")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument(
        "--check",
        nargs="?",
        const=True,
        default=None,
        help="verify the selected corpora's query files (or the query file given) against the tree",
    )
    parser.add_argument("--json", action="store_true", help="print the selected corpora as JSON")
    args = parser.parse_args(argv)
    try:
        corpora = manifest(args.manifest)
        if args.package:
            selected: tuple[Corpus, ...] = (find_corpus(args.package, corpora),)
        elif args.all or args.split or args.name:
            selected = select_corpora(corpora, split=args.split or "all", names=args.name)
        else:
            selected = (find_corpus("flask", corpora),)
    except ManifestError as error:
        raise SystemExit(f"fetch_corpus: {error}") from None
    if args.json:
        print(json.dumps([corpus.__dict__ for corpus in selected], indent=1, default=list))
        return 0
    if args.dest and len(selected) != 1:
        raise SystemExit("fetch_corpus: --dest needs exactly one corpus")
    problems = 0
    for corpus in selected:
        tree = ensure_fetched(corpus, force=args.force, dest=args.dest)
        if args.check is True:
            query_file = ROOT / corpus.queries
            if not query_file.exists():
                print(f"{corpus.name}: no query file {corpus.queries} yet")
                problems += 1
                continue
            problems += check(tree, query_file)
        elif args.check:
            problems += check(tree, Path(args.check))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
