"""Building a corpus tree from a downloaded archive (``bench/eval/fetch_corpus.py``), offline.

The archives are made here (an sdist-like and an npm-like tarball, a Debian package built with
``dpkg-deb -b``), so what is checked is the unpacking, the ``include`` mapping, the sha256 pin
and the fixed commit, without a registry.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from bench.eval.harness.corpora import Corpus

ROOT = Path(__file__).resolve().parents[2]


def _fetch_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fetch_corpus", ROOT / "bench" / "eval" / "fetch_corpus.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fetch_corpus", module)
    spec.loader.exec_module(module)
    return module


fetch = _fetch_module()


def _tarball(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _corpus(source: str, archive: Path, include: tuple = ()) -> Corpus:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return Corpus("demo-1.0", "python", source, "demo", "1.0", digest, "tune", "q.json", include)


def _build(corpus: Corpus, archive: Path, dest: Path) -> str:
    fetch.verify_sha256(corpus, archive)
    base = fetch.unpack(corpus, archive, archive.parent / "x")
    fetch.assemble(corpus, base, dest)
    fetch._git(dest, "init", "--quiet", "--initial-branch=main")
    fetch._git(dest, "add", "--all", "--force")
    fetch._git(dest, "commit", "--quiet", "--no-gpg-sign", "-m", "demo 1.0")
    return fetch._git(dest, "rev-parse", "HEAD")


def test_sdist_tree_is_its_top_directory_and_the_commit_is_fixed(tmp_path: Path) -> None:
    files = {"demo-1.0/src/demo.py": "def f():\n    return 1\n", "demo-1.0/README.md": "# Demo\n"}
    commits = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        archive = _tarball(tmp_path / run / "demo-1.0.tar.gz", files)
        commits.append(_build(_corpus("pypi", archive), archive, tmp_path / run / "tree"))
        assert (tmp_path / run / "tree" / "src" / "demo.py").read_text().startswith("def f")
    assert commits[0] == commits[1]  # same tree, author, date and message: same commit id


def test_npm_tarball_unpacks_its_package_directory(tmp_path: Path) -> None:
    archive = _tarball(tmp_path / "demo-1.0.tgz", {"package/index.js": "module.exports = 1\n"})
    _build(_corpus("npm", archive), archive, tmp_path / "tree")
    assert (tmp_path / "tree" / "index.js").is_file()


def test_a_changed_archive_is_refused(tmp_path: Path) -> None:
    archive = _tarball(tmp_path / "demo-1.0.tar.gz", {"demo-1.0/a.py": "x = 1\n"})
    corpus = _corpus("pypi", archive)
    _tarball(archive, {"demo-1.0/a.py": "x = 2\n"})
    with pytest.raises(SystemExit, match=r"sha256 mismatch for demo-1\.0\.tar\.gz"):
        fetch.verify_sha256(corpus, archive)


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_debian_package_include_maps_paths_and_decompresses_docs(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    source = package / "usr/share/gocode/src/example.com/demo"
    source.mkdir(parents=True)
    (source / "demo.go").write_text("package demo\n\nfunc F() int { return 1 }\n")
    docs = package / "usr/share/doc/golang-demo-dev"
    docs.mkdir(parents=True)
    (docs / "README.md.gz").write_bytes(gzip.compress(b"# Demo\n\n## Install\n"))
    (package / "DEBIAN").mkdir()
    (package / "DEBIAN" / "control").write_text(
        "Package: golang-demo-dev\nVersion: 1.0-1\nArchitecture: all\n"
        "Maintainer: nobody <nobody@invalid>\nDescription: demo\n"
    )
    archive = tmp_path / "golang-demo-dev_1.0-1_all.deb"
    subprocess.run(["dpkg-deb", "-b", str(package), str(archive)], check=True, capture_output=True)
    include = (
        ("usr/share/gocode/src/example.com/demo", ""),
        ("usr/share/doc/golang-demo-dev/README.md.gz", "README.md"),
    )
    tree = tmp_path / "tree"
    _build(_corpus("debian", archive, include), archive, tree)
    assert sorted(p.name for p in tree.iterdir() if p.name != ".git") == ["README.md", "demo.go"]
    assert (tree / "README.md").read_text() == "# Demo\n\n## Install\n"


def test_an_include_path_missing_from_the_archive_is_named(tmp_path: Path) -> None:
    archive = _tarball(tmp_path / "demo-1.0.tar.gz", {"demo-1.0/a.py": "x = 1\n"})
    corpus = _corpus("pypi", archive, (("demo-1.0/nope", ""),))
    base = fetch.unpack(corpus, archive, tmp_path / "x")
    with pytest.raises(SystemExit, match=r"the archive has no 'demo-1\.0/nope'"):
        fetch.assemble(corpus, base, tmp_path / "tree")
