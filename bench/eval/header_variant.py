"""Index a corpus again with a variant of the embedded header (``index_variant.py`` plus a patch).

    .venv/bin/python bench/eval/header_variant.py flask-3.0.3 +splitname
    .venv/bin/python bench/eval/levers.py --variant +splitname --levers defaults --corpus ...

Variant ``+splitname``: the header's ``<kind>: <symbol>`` line also gives the symbol's words
(``function: SecureCookieSessionInterface.save_session (secure cookie session interface save
session)``) when splitting changes anything, since MiniLM's word pieces cut a camelCase or
run-together name into fragments. Measurement only: ``indexing.services.vectors`` is patched in
this process, the product's header is unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))


def split_name_header(chunk: Any) -> str:
    from indexing.identifiers import split_identifier

    parts = [f"path: {chunk.path}"]
    if chunk.symbol:
        words = " ".join(split_identifier(chunk.symbol))
        plain = chunk.symbol.lower().replace(".", " ").replace("_", " ")
        named = f"{chunk.kind or 'symbol'}: {chunk.symbol}"
        parts.append(named + (f" ({words})" if words and words != plain else ""))
    if chunk.summary:
        parts.append(f"summary: {chunk.summary}")
    return "\n".join(parts) + "\n"


VARIANTS = {"+splitname": split_name_header}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("name", help="a corpus of the manifest")
    parser.add_argument("suffix", choices=sorted(VARIANTS), help="the header variant")
    parser.add_argument("--manifest", type=Path, help="corpora manifest (default: the project's)")
    args = parser.parse_args(argv)
    import index_variant

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from indexing.services import vectors

    vectors.embedding_header = VARIANTS[args.suffix]  # type: ignore[assignment]
    return index_variant.main(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
