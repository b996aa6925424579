"""Intent without trigger words, from the repository's own vectors (measured, not a product rule).

    .venv/bin/python bench/eval/centroid_intent.py --margins 0,0.02,0.05 \\
        --corpus flask-3.0.3=bench/eval/flask-queries.json ...

For a question whose tests (or docs) the scope leaves out by default, compare its embedding
with the mean vector of the repository's test chunks, doc chunks and code chunks: when the
tests' centroid is closer than the code's by more than ``margin`` (cosine), the tests are
searched too (``include_tests``: included, not preferred; the docs the same way) -- a data-driven
"this sounds like a test" with no word list. Each question then runs through ``SearchExecutor``
as ``POST /api/search`` would with that decision; MRR@10 is paired with the defaults
(``levers.paired_interval``, within each corpus).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

_CENTROIDS = """
    SELECT c.is_test, c.is_doc, avg(v.vector::vector(384))::text
    FROM indexing_chunkembedding e
    JOIN indexing_chunk c ON c.id = e.chunk_id
    JOIN indexing_repository r ON r.id = c.repository_id AND c.generation = r.active_generation
    JOIN indexing_embeddingvector v ON v.id = e.embedding_vector_id
    WHERE c.repository_id = %s
    GROUP BY c.is_test, c.is_doc
"""


def centroids(repo_id: Any) -> dict[str, Any]:
    import numpy as np
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_CENTROIDS, [repo_id])
        rows = cursor.fetchall()
    found: dict[str, Any] = {}
    for is_test, is_doc, text in rows:
        kind = "tests" if is_test else "docs" if is_doc else "code"
        vector = np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)
        found[kind] = vector / (np.linalg.norm(vector) or 1.0)
    return found


def widen(vector: Any, text: str, means: dict[str, Any], margin: float) -> dict[str, Any]:
    """The scope flags the centroid rule sets for one question (empty: the defaults)."""
    import numpy as np

    from search.retrieval.question_words import DOC_WORDS, TEST_WORDS, query_mentions

    q = vector / (np.linalg.norm(vector) or 1.0)
    code = float(q @ means["code"]) if "code" in means else 0.0
    out: dict[str, Any] = {}
    for kind, flag, words in (
        ("tests", "include_tests", TEST_WORDS),
        ("docs", "include_docs", DOC_WORDS),
    ):
        if (
            kind in means
            and not query_mentions(text, words)
            and float(q @ means[kind]) - code > margin
        ):
            out[flag] = True
    return out


def reciprocal_ranks(query_set: Any, repo_id: Any, flags: list[dict[str, Any]]) -> list[float]:
    import dataclasses

    from levers import K

    from search.evaluation.harness import Configuration, run_configuration
    from search.evaluation.metrics import first_hit_rank
    from search.executor import SearchExecutor

    ranks = []
    for query, overrides in zip(query_set.queries, flags, strict=True):
        configuration = Configuration(
            "c", {"include_tests": None, "include_docs": None, **overrides}
        )
        one = dataclasses.replace(query_set, queries=(query,))
        report = run_configuration(
            configuration, one, k=K, repo_ids=[repo_id], search=SearchExecutor().run
        )
        rank = first_hit_rank(report.outcomes[0], K)
        ranks.append(1.0 / rank if rank else 0.0)
    return ranks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", action="append", required=True, help="NAME=QUERIES.json")
    parser.add_argument("--margins", default="0,0.02,0.05", help="e.g. --margins=-0.05,0")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from levers import paired_interval

    from indexing.models import Repository
    from llm import get_embedder
    from search.evaluation.queries import load_query_set

    margins = [float(m) for m in args.margins.split(",")]
    embedder = get_embedder()
    pooled: dict[float | None, list[float]] = {None: [], **{m: [] for m in margins}}
    strata: list[str] = []
    for spec in args.corpus:
        name, _, path = spec.partition("=")
        query_set = load_query_set(Path(path))
        repo_id = Repository.objects.get(name=name).pk
        means = centroids(repo_id)
        vectors = embedder.embed([q.query for q in query_set.queries])
        strata += [name] * len(query_set.queries)
        base = reciprocal_ranks(query_set, repo_id, [{}] * len(query_set.queries))
        pooled[None] += base
        line = [f"{name}: defaults {sum(base) / len(base):.3f}"]
        for margin in margins:
            flags = [
                widen(vector, q.query, means, margin)
                for vector, q in zip(vectors, query_set.queries, strict=True)
            ]
            rr = reciprocal_ranks(query_set, repo_id, flags)
            pooled[margin] += rr
            diff, low, high = paired_interval(base, rr)
            widened = sum(1 for f in flags if f)
            line.append(
                f"margin {margin}: {sum(rr) / len(rr):.3f} {diff:+.3f} [{low:+.3f}, {high:+.3f}]"
                f" ({widened} widened)"
            )
        print(" | ".join(line), flush=True)
    for margin in margins:
        diff, low, high = paired_interval(pooled[None], pooled[margin], strata)
        print(f"pooled margin {margin}: {diff:+.3f} [{low:+.3f}, {high:+.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
