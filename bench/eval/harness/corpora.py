"""The evaluation corpora manifest (``bench/eval/corpora.json``): parsing and selecting corpora.

The manifest is a JSON object with one list::

    {"corpora": [
      {"name": "flask-3.0.3", "language": "python", "source": "pypi",
       "package": "flask", "version": "3.0.3", "sha256": "<of the downloaded archive>",
       "split": "tune", "queries": "bench/eval/flask-queries.json"},
      {"name": "gorilla-mux-1.8.0", "language": "go", "source": "debian",
       "package": "golang-github-gorilla-mux-dev", "version": "1.8.0-1", "sha256": "...",
       "split": "tune", "queries": "bench/eval/gorilla-mux-queries.json",
       "include": {"usr/share/gocode/src/github.com/gorilla/mux": "",
                   "usr/share/doc/golang-github-gorilla-mux-dev/README.md.gz": "README.md"}}
    ]}

- ``name``: the corpus's directory under ``bench/corpora/`` and the repository name it is
  indexed under (letters, digits, ``.``, ``_``, ``-``); unique.
- ``source``: ``pypi`` (the sdist, ``pip download --no-binary :all:``), ``npm`` (the tarball of
  ``npm pack NAME@VERSION``) or ``debian`` (the binary package of
  ``apt-get download PACKAGE=VERSION``, unpacked with ``dpkg-deb -x``).
- ``sha256``: of the downloaded archive (``.tar.gz`` / ``.tgz`` / ``.deb``); a mismatch stops.
- ``split``: ``tune`` (defaults may be chosen on it) or ``report`` (held out: figures only).
- ``queries``: the labelled query file, relative to the reposearch checkout.
- ``include`` (optional; required for ``debian``): which parts of the unpacked archive make the
  tree, ``{"path in the archive": "path in the tree"}`` (``""`` = the tree's root). A file
  ending in ``.gz`` whose target does not is decompressed. Without it the tree is the archive's
  single top directory (``flask-3.0.3/`` of an sdist, ``package/`` of an npm tarball).
- ``note`` (optional): free text for readers. Any other field is refused.

This module needs neither Django nor a database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCES = frozenset({"pypi", "npm", "debian"})
SPLITS = frozenset({"tune", "report"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
REQUIRED = ("name", "language", "source", "package", "version", "sha256", "split", "queries")


class ManifestError(ValueError):
    """The manifest is malformed, or a selection names no corpus (the message says which)."""


@dataclass(frozen=True)
class Corpus:
    name: str
    language: str
    source: str
    package: str
    version: str
    sha256: str
    split: str
    queries: str
    include: tuple[tuple[str, str], ...] = ()

    def directory(self, root: Path) -> Path:
        """Where the corpus's git repository lives under a reposearch checkout ``root``."""
        return root / "bench" / "corpora" / self.name


def _include(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise ManifestError(f"{where}: 'include' must be a non-empty object of path -> path")
    pairs = []
    for source, target in raw.items():
        if not isinstance(target, str) or not source:
            raise ManifestError(f"{where}: include {source!r} must map to a string path")
        for path in (source, target):
            if path.startswith("/") or ".." in Path(path).parts:
                raise ManifestError(f"{where}: include path {path!r} must be relative, no '..'")
        pairs.append((source.strip("/"), target.strip("/")))
    return tuple(pairs)


def _corpus(raw: Any, number: int) -> Corpus:
    if not isinstance(raw, dict):
        raise ManifestError(f"corpus {number}: must be an object")
    where = f"corpus {raw.get('name') or number}"
    missing = [key for key in REQUIRED if not isinstance(raw.get(key), str) or not raw[key]]
    if missing:
        raise ManifestError(f"{where}: missing or empty string field(s) {', '.join(missing)}")
    if not _NAME.match(raw["name"]):
        raise ManifestError(f"{where}: name may hold only letters, digits, '.', '_' and '-'")
    if raw["source"] not in SOURCES:
        raise ManifestError(f"{where}: source {raw['source']!r} not in {sorted(SOURCES)}")
    if raw["split"] not in SPLITS:
        raise ManifestError(f"{where}: split {raw['split']!r} not in {sorted(SPLITS)}")
    if not _SHA256.match(raw["sha256"]):
        raise ManifestError(f"{where}: sha256 must be 64 lowercase hex digits")
    include = _include(raw.get("include"), where)
    if raw["source"] == "debian" and not include:
        raise ManifestError(f"{where}: a debian corpus needs 'include' (which paths make the tree)")
    unknown = set(raw) - {*REQUIRED, "include", "note"}
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    return Corpus(**{key: raw[key] for key in REQUIRED}, include=include)


def parse_manifest(data: Any) -> tuple[Corpus, ...]:
    """Validate the decoded JSON of a manifest."""
    if not isinstance(data, dict) or not isinstance(data.get("corpora"), list):
        raise ManifestError("a corpora manifest is an object with a 'corpora' list")
    corpora = tuple(_corpus(raw, number) for number, raw in enumerate(data["corpora"], start=1))
    names = [corpus.name for corpus in corpora]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ManifestError(f"duplicate corpus name(s): {', '.join(duplicates)}")
    return corpora


def load_manifest(path: Path | str) -> tuple[Corpus, ...]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ManifestError(f"{path}: not valid JSON ({error})") from None
    return parse_manifest(data)


def select_corpora(
    corpora: Sequence[Corpus], *, split: str = "all", names: Iterable[str] = ()
) -> tuple[Corpus, ...]:
    """The corpora of ``split`` (``tune``, ``report`` or ``all``), or those named, in order."""
    wanted = [name for name in names if name]
    if wanted:
        known = {corpus.name: corpus for corpus in corpora}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise ManifestError(
                f"no corpus named {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return tuple(known[name] for name in wanted)
    if split != "all" and split not in SPLITS:
        raise ManifestError(f"split {split!r} is not one of all, {', '.join(sorted(SPLITS))}")
    chosen = tuple(corpus for corpus in corpora if split in ("all", corpus.split))
    if not chosen:
        raise ManifestError(f"the manifest has no corpus in split {split!r}")
    return chosen
