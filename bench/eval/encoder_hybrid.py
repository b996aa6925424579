"""Run ``bench/eval/run.py`` with another in-process embedding model as the hybrid's encoder.

    .venv/bin/python bench/eval/encoder_hybrid.py bge-small-en-v1.5 --split tune \\
        --configs hybrid+scope --json out.json

Embeds the live chunks of the evaluated corpora that have no vector in that model's space (the
exact text the embed stage embeds, with the product's ``LocalEmbedder``), reports chunks/s, then
runs the eval command with ``LLM_EMBEDDING_MODEL`` set to the model, so queries are embedded by
the same model (with its query prefix) and the vector stage searches its space. Every argument
after the model name goes to ``bench/eval/run.py``. The corpora must be indexed already
(``bench/eval/index_corpus.py``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def embed_missing(model: str, names: list[str]) -> None:
    """Vectors in ``model``'s space for every live chunk of the named repositories (all if none)."""
    from indexing.models import Chunk, Repository
    from indexing.services.vectors import (
        embedded_text,
        embedded_text_hash,
        space_for,
        store_vectors,
    )
    from llm.config import ModelSettings
    from llm.local_models import local_model
    from llm.providers import build_embedder

    spec = local_model(model)
    embedder = build_embedder(ModelSettings(embedding_model=spec.name, embedding_dim=spec.dim))
    space = space_for(embedder)
    repositories = Repository.objects.filter(name__in=names) if names else Repository.objects.all()
    for repository in repositories:
        chunks = list(
            Chunk.objects.filter(repository=repository, generation=repository.active_generation)
            .exclude(embeddings__space=space)
            .order_by("id")
        )
        if not chunks:
            continue
        hashes = [embedded_text_hash(c) for c in chunks]
        texts = dict(zip(hashes, (embedded_text(c) for c in chunks), strict=True))
        started = time.perf_counter()
        vectors = embedder.embed(list(texts.values()))
        took = time.perf_counter() - started
        print(
            f"{repository.name}: {len(texts)} texts with {spec.name} in {took:.0f} s "
            f"({len(texts) / took:.1f}/s)",
            flush=True,
        )
        groups: dict[str, list[int]] = {}
        for chunk, text_hash in zip(chunks, hashes, strict=True):
            groups.setdefault(text_hash, []).append(chunk.pk)
        store_vectors(space, repository.pk, groups, dict(zip(texts, vectors, strict=True)))


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from bench.eval.harness.command import EvalCommand
    from bench.eval.harness.corpora import load_manifest, select_corpora

    model, eval_args = sys.argv[1], sys.argv[2:]
    names = [eval_args[i + 1] for i, a in enumerate(eval_args) if a == "--corpus"]
    if not names and "--split" in eval_args:
        split = eval_args[eval_args.index("--split") + 1]
        where = ROOT / "bench/eval/corpora.json"
        if "--manifest" in eval_args:
            where = Path(eval_args[eval_args.index("--manifest") + 1])
        names = [c.name for c in select_corpora(load_manifest(where), split=split)]
    embed_missing(model, names)
    settings.LLM_EMBEDDING_MODEL = model
    call_command(EvalCommand(), *eval_args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
