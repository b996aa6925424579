"""Index a corpus of the manifest again, under another name, with the code as it is now.

An index-side lever (a chunking switch, say) is measured by indexing the corpus a second time
with the lever on and pairing the two repositories question by question (``pair_repos.py``)::

    .venv/bin/python bench/eval/index_variant.py nom-7.1.1 +tests     # -> repository nom-7.1.1+tests
    .venv/bin/python bench/eval/pair_repos.py bench/eval/nom-queries.json nom-7.1.1 nom-7.1.1+tests

Turn the lever on in the code first (``indexing/chunking/inline_tests.py``'s switches for the
"tests inside files" figures). The corpus directory is copied to ``bench/corpora/<name><suffix>`` (a repository URL is unique);
vectors of unchanged chunks are reused by content hash, so only new chunks are embedded.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))


class _Renamed:
    """A manifest corpus under another name and directory."""

    def __init__(self, corpus: Any, name: str) -> None:
        self._corpus = corpus
        self.name = name

    def directory(self, root: Path) -> Path:
        return root / "bench" / "corpora" / self.name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._corpus, attribute)


def main(argv: list[str]) -> int:
    name, suffix = argv
    os.chdir(ROOT)
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    from fetch_corpus import ensure_fetched, manifest

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from index_corpus import index_corpus

    corpus = next(c for c in manifest() if c.name == name)
    source = corpus.directory(ROOT)
    if not (source / ".git").exists():
        ensure_fetched(corpus)
    variant = _Renamed(corpus, name + suffix)
    target = variant.directory(ROOT)
    if not target.exists():
        shutil.copytree(source, target)
    index_corpus(variant)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
