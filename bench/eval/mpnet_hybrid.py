"""Run ``manage.py eval`` with all-mpnet-base-v2 as the embedding model (measurement only).

    .venv/bin/python bench/eval/mpnet_hybrid.py bench/corpora/mpnet --split tune \
        --corpus gorilla-mux-1.8.0 --configs vector+scope,hybrid+scope --json out.json

Stores MPNet vectors for the named corpora's live chunks in their own embedding space
(``local/all-mpnet-base-v2/768``; the exact text the embed stage embeds: header + content,
head only), reusing ``granularity.py``'s vector cache, then runs the eval command with
``llm.get_embedder`` answering the MPNet embedder, so the query is embedded by the same
model and the vector stage searches that space. Every argument after the model folder goes
to ``manage.py eval``, except ``--cache FILE`` (the vector cache, default
``bench/results/granularity-cache/local_all-mpnet-base-v2_768.npz``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from django.core.management import call_command
    from granularity import CachedEmbedder
    from mpnet_runtime import MPNetEmbedder, prepare

    import llm
    from indexing.models import Chunk, Repository
    from indexing.services.vectors import (
        embedded_text,
        embedded_text_hash,
        space_for,
        store_vectors,
    )

    model_dir, eval_args = Path(sys.argv[1]), sys.argv[2:]
    cache_file = ROOT / "bench/results/granularity-cache/local_all-mpnet-base-v2_768.npz"
    if "--cache" in eval_args:
        at = eval_args.index("--cache")
        cache_file = Path(eval_args[at + 1])
        del eval_args[at : at + 2]
    mpnet = MPNetEmbedder(prepare(model_dir))
    cache = CachedEmbedder(mpnet, cache_file)
    space = space_for(mpnet)
    names = [eval_args[i + 1] for i, a in enumerate(eval_args) if a == "--corpus"]
    for repository in (
        Repository.objects.filter(name__in=names) if names else Repository.objects.all()
    ):
        chunks = list(
            Chunk.objects.filter(repository=repository, generation=repository.active_generation)
            .exclude(embeddings__space=space)
            .order_by("id")
        )
        if not chunks:
            continue
        print(f"{repository.name}: embedding {len(chunks)} chunks with MPNet", flush=True)
        vectors = cache.embed([embedded_text(c) for c in chunks])
        hashes = [embedded_text_hash(c) for c in chunks]
        groups: dict[str, list[int]] = {}
        for chunk, text_hash in zip(chunks, hashes, strict=True):
            groups.setdefault(text_hash, []).append(chunk.pk)
        store_vectors(space, repository.pk, groups, dict(zip(hashes, vectors, strict=True)))

    class QueryEmbedder(MPNetEmbedder):
        def __init__(self) -> None:
            self.runtime = mpnet.runtime

    llm.get_embedder = lambda *args, **kwargs: QueryEmbedder()  # type: ignore[assignment]
    call_command("eval", *eval_args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
