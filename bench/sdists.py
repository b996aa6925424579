"""Source distributions the benchmarks index, pinned by version and sha256, in one place.

    from sdists import unpacked_sdist
    source = unpacked_sdist("django")          # bench/corpora/sdists/django-5.2.8/<top folder>

The sdist is downloaded once with pip (``--no-binary :all:``, from the package index only), its
sha256 checked against ``PINNED``, and unpacked under ``bench/corpora/sdists/`` (not committed).
(``bench/eval/fetch_corpus.py`` builds the evaluation corpus with its own pin.)
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path(__file__).resolve().parent / "corpora" / "sdists"
PINNED: dict[str, tuple[str, str]] = {
    "django": ("5.2.8", "23254866a5bb9a2cfa6004e8b809ec6246eba4b58a7589bc2772f1bcc8456c7f"),
    "click": ("8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    "flask": ("3.0.3", "ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842"),
}


def pinned(requirement: str) -> tuple[str, str, str]:
    """(package, version, sha256) for ``name`` or ``name==version``; refuses an unpinned one."""
    name, _, version = requirement.partition("==")
    name = name.strip().lower()
    if name not in PINNED or (version and version != PINNED[name][0]):
        known = ", ".join(f"{n}=={v}" for n, (v, _h) in sorted(PINNED.items()))
        raise SystemExit(f"{requirement!r} is not pinned in bench/sdists.py (pinned: {known})")
    return name, PINNED[name][0], PINNED[name][1]


def download_sdist(requirement: str, dest: Path) -> Path:
    """The pinned sdist's archive in ``dest``, its sha256 checked."""
    name, version, sha256 = pinned(requirement)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--no-binary", ":all:", "--dest", str(dest), f"{name}=={version}"]
    subprocess.run(command, check=True)
    archives = [p for p in dest.glob("*.tar.gz") if p.name.lower() == f"{name}-{version}.tar.gz"]
    if len(archives) != 1:
        raise SystemExit(f"pip did not produce {name}-{version}.tar.gz in {dest}")
    digest = hashlib.sha256(archives[0].read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"sha256 mismatch for {archives[0].name}: {digest} != pinned {sha256}")
    return archives[0]


def unpacked_sdist(requirement: str) -> Path:
    """The pinned sdist unpacked (downloaded on first use); returns its top-level folder."""
    name, version, _sha = pinned(requirement)
    unpacked = CACHE / f"{name}-{version}"
    if not unpacked.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="reposearch-sdist-", dir=CACHE) as tmp:
            archive = download_sdist(requirement, Path(tmp))
            with tarfile.open(archive) as tar:
                tar.extractall(Path(tmp) / "x", filter="data")
            (Path(tmp) / "x").rename(unpacked)
    (top,) = [p for p in unpacked.iterdir() if p.is_dir()]
    return top
