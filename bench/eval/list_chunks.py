"""List the chunks the indexer makes of a corpus's files: for writing definition-sized labels.

    .venv/bin/python bench/eval/list_chunks.py gorilla-mux-1.8.0            # every file
    .venv/bin/python bench/eval/list_chunks.py gorilla-mux-1.8.0 route.go   # some files

Prints ``path:start-end kind symbol`` per chunk, chunked in-process with the indexer's own
``chunk_file`` (no database, no search): the ranges a query's ``expected`` entries should
name. Files the walker would skip (binary, too large) are left out.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

from fetch_corpus import MANIFEST, corpus_tree, find_corpus, manifest  # noqa: E402

from indexing.chunking import chunk_file  # noqa: E402
from indexing.languages import detect_language, is_doc_path, is_test_path  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("corpus", help="a corpus of the manifest (name, or package)")
    parser.add_argument("files", nargs="*", help="only these files or folders")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpora manifest")
    args = parser.parse_args(argv)
    tree = corpus_tree(find_corpus(args.corpus, manifest(args.manifest)))
    files = subprocess.run(
        ["git", "-C", str(tree), "ls-files"], check=True, capture_output=True, text=True
    ).stdout.split()
    wanted = args.files
    for path in files:
        if wanted and not any(path == w or path.startswith(w.rstrip("/") + "/") for w in wanted):
            continue
        data = (tree / path).read_bytes()
        if b"\0" in data[:8000]:
            continue
        language = detect_language(path, data[:256])
        flags = ("T" if is_test_path(path) else "-") + ("D" if is_doc_path(path, language) else "-")
        text = data.decode("utf-8", "replace")
        for chunk in chunk_file(text, language, path):
            print(
                f"{flags} {path}:{chunk.start_line}-{chunk.end_line} {chunk.kind} {chunk.symbol or ''}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
