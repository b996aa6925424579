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

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))


class _Renamed:
    """A manifest corpus under another name (so in another directory)."""

    def __init__(self, corpus: Any, name: str) -> None:
        self._corpus = corpus
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._corpus, attribute)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("name", help="a corpus of the manifest")
    parser.add_argument("suffix", help="appended to its name: the variant's repository")
    parser.add_argument("--manifest", type=Path, help="corpora manifest (default: the project's)")
    args = parser.parse_args(argv)
    name, suffix = args.name, args.suffix
    os.chdir(ROOT)
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    from fetch_corpus import MANIFEST, corpus_tree, ensure_fetched, manifest

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from index_corpus import index_corpus

    corpus = next(c for c in manifest(args.manifest or MANIFEST) if c.name == name)
    source = corpus_tree(corpus)
    if not (source / ".git").exists():
        ensure_fetched(corpus)
    variant = _Renamed(corpus, name + suffix)
    target = corpus_tree(variant)
    if not target.exists():
        shutil.copytree(source, target)
    index_corpus(variant)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
