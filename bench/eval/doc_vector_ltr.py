"""Would a second vector over doc summaries help learned fusion? Offline, from ltr captures.

    .venv/bin/python bench/eval/doc_vector_ltr.py bench/results/ltr-tune.json [--add 20]

``granularity.py``'s ``doc-only`` variant showed that a vector of a definition's header and the
first paragraph of its doc comment alone finds conceptual answers that the content vector misses,
and its ``rrf-doc`` variant that fusing that list by plain RRF loses overall. This script asks the
next question without touching the index: as a *source for learned fusion's pool* (its top
``--add`` chunks join the pool) and as *features* (its ranks and cosine), does it raise the
cross-validated MRR@10 of the learned model?

For each captured corpus the live chunks are read from the database the capture was taken on
(``ltr_capture.py``), each chunk with a doc summary (``doc_comments.summary``) gets the vector of
``path: ... / kind: symbol`` + summary (MiniLM, cached on disk), and each question ranks the
documented chunks its scope allows by cosine. Both variants are replayed and trained exactly as
``ltr_train.py`` does (same pool, same loss, leave-one-corpus-out CV over the same lambdas):

* ``base``: today's features and pool;
* ``doc``: the pool plus the doc list's top ``--add``, and five more features (doc-list
  10/(10+rank), 60/(60+rank), cosine, best cosine minus this one, joined only through it).

Only tune-half captures belong here (the report half is judged once, through the pipeline).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

import ltr_train  # noqa: E402
from ltr_train import (  # noqa: E402
    LAMBDAS,
    Question,
    build_questions,
    chunk_facts,
    cross_validate,
    overlaps,
    replay,
    rr,
)

EXTRA = ("doc_rr10", "doc_rr60", "doc_cos", "doc_gap", "doc_only")


def _doc_vectors(
    repository: str, embedder: Any
) -> tuple[dict[int, dict[str, Any]], list[int], np.ndarray]:
    """Every live chunk of the repository (id -> row) and the doc-summary vectors of those
    with a summary."""
    from doc_comments import summary

    from indexing.models import Chunk, Repository

    repo = Repository.objects.get(pk=repository)
    rows: dict[int, dict[str, Any]] = {
        c.id: {
            "path": c.path,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "symbol": c.symbol,
            "kind": c.kind,
            "is_test": c.is_test,
            "is_doc": c.is_doc,
            "doc": summary(c.content),
        }
        for c in Chunk.objects.filter(repository=repo, generation=repo.active_generation)
    }
    ids = [cid for cid, row in rows.items() if row["doc"]]
    texts = []
    for cid in ids:
        row = rows[cid]
        head = f"path: {row['path']}\n"
        if row["symbol"]:
            head += f"{row['kind'] or 'symbol'}: {row['symbol']}\n"
        texts.append(head + row["doc"])
    vectors = embedder.embed(texts) if ids else np.zeros((0, 384))
    return rows, ids, vectors


def augment(
    capture: Path, depth: int, add: int, embedder: Any
) -> tuple[list[Question], list[Question], dict[str, int]]:
    """(base questions, doc-augmented questions, counts) for one capture file."""
    import json

    from search.ranking.fusion import FusedCandidate
    from search.ranking.learned import features

    base = build_questions(capture, depth)
    by_key = {(q.corpus, q.id): q for q in base}
    data = json.loads(capture.read_text())
    out: list[Question] = []
    counts = {"questions": 0, "answer_added": 0, "answer_in_doc_top": 0}
    for corpus in data["corpora"]:
        repo = corpus["repository"]
        rows, ids, vectors = _doc_vectors(repo, embedder)
        facts = {cid: chunk_facts(repo, r) for cid, r in rows.items()}
        doc_tests = np.array([rows[c]["is_test"] for c in ids], dtype=bool)
        doc_docs = np.array([rows[c]["is_doc"] for c in ids], dtype=bool)
        qvecs = embedder.embed([q["query"] for q in corpus["questions"]])
        for q, qvec in zip(corpus["questions"], qvecs, strict=True):
            counts["questions"] += 1
            pool, lists, shape = replay(q, depth, facts)
            scope = q["scope"]
            # The doc list: documented chunks the scope allows, by cosine.
            allowed = (~doc_tests | scope["include_tests"]) & (~doc_docs | scope["include_docs"])
            sims = np.where(allowed, vectors @ qvec, -np.inf) if len(ids) else np.zeros(0)
            order = [i for i in np.argsort(-sims)[:depth] if np.isfinite(sims[i])]
            doc_rank = {ids[i]: (r, float(sims[i])) for r, i in enumerate(order, start=1)}
            best_doc = float(sims[order[0]]) if order else 0.0
            in_pool = {c.chunk_id for c in pool}
            added = [FusedCandidate(ids[i], 0.0) for i in order[:add] if ids[i] not in in_pool]
            grown = [*pool, *added]
            rows_x = features(grown, lists, facts, shape)
            extra = []
            for c in grown:
                found = doc_rank.get(c.chunk_id)
                extra.append(
                    [
                        10.0 / (10.0 + found[0]) if found else 0.0,
                        60.0 / (60.0 + found[0]) if found else 0.0,
                        found[1] if found else 0.0,
                        best_doc - found[1] if found else 1.0,
                        1.0 if c.chunk_id not in in_pool else 0.0,
                    ]
                )
            x = np.hstack([np.array(rows_x, dtype=float), np.array(extra, dtype=float)])
            relevant = np.array(
                [overlaps(rows[c.chunk_id], q["expected"]) for c in grown], dtype=bool
            )
            if relevant[len(pool) :].any() and not relevant[: len(pool)].any():
                counts["answer_added"] += 1
            if any(
                relevant[i]
                for i, c in enumerate(grown)
                if c.chunk_id in doc_rank and doc_rank[c.chunk_id][0] <= 10
            ):
                counts["answer_in_doc_top"] += 1
            old = by_key[(corpus["corpus"], q["id"])]
            out.append(replace(old, x=x, relevant=relevant))
    return base, out, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("captures", nargs="+", type=Path)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--add", type=int, default=20, help="doc-list chunks joining the pool")
    parser.add_argument("--lambdas", default=",".join(str(x) for x in LAMBDAS))
    parser.add_argument("--cache", type=Path, default=ROOT / "bench/results/granularity-cache")
    args = parser.parse_args(argv)
    ltr_train._setup()
    from granularity import CachedEmbedder

    from llm import get_embedder
    from search.evaluation.bootstrap import paired_bootstrap

    embedder = CachedEmbedder.in_folder(get_embedder(), args.cache)
    base: list[Question] = []
    doc: list[Question] = []
    for path in args.captures:
        plain, grown, counts = augment(path, args.depth, args.add, embedder)
        base += plain
        doc += grown
        print(f"{path}: {counts}")
    lambdas = [float(x) for x in args.lambdas.split(",")]
    cv_base = cross_validate(base, lambdas)
    cv_doc = cross_validate(doc, lambdas)
    corpora = sorted({q.corpus for q in base})
    print("\nleave-one-corpus-out MRR@10 by lambda: base | doc")
    for lam in lambdas:
        per = "  ".join(
            f"{c} {np.mean([v for v, q in zip(cv_base[lam], base, strict=True) if q.corpus == c]):.3f}"
            f"|{np.mean([v for v, q in zip(cv_doc[lam], doc, strict=True) if q.corpus == c]):.3f}"
            for c in corpora
        )
        print(f"  lambda {lam:g}: {np.mean(cv_base[lam]):.3f} | {np.mean(cv_doc[lam]):.3f}  {per}")
    best_b = max(lambdas, key=lambda lam: (round(float(np.mean(cv_base[lam])), 4), lam))
    best_d = max(lambdas, key=lambda lam: (round(float(np.mean(cv_doc[lam])), 4), lam))
    strata = [q.corpus for q in base]
    found = paired_bootstrap(
        cv_base[best_b], cv_doc[best_d], strata=strata, resamples=2000, seed=16
    )
    print(
        f"\nbest lambdas: base {best_b:g} ({np.mean(cv_base[best_b]):.3f}), doc {best_d:g} "
        f"({np.mean(cv_doc[best_d]):.3f}): {found.difference:+.3f} [{found.low:+.3f}, {found.high:+.3f}]"
    )
    for kind in sorted({q.kind for q in base}):
        idx = [i for i, q in enumerate(base) if q.kind == kind]
        b = [cv_base[best_b][i] for i in idx]
        d = [cv_doc[best_d][i] for i in idx]
        f = paired_bootstrap(b, d, strata=[strata[i] for i in idx], resamples=2000, seed=16)
        print(
            f"  {kind} ({len(idx)}): {np.mean(b):.3f} -> {np.mean(d):.3f}, {f.difference:+.3f} [{f.low:+.3f}, {f.high:+.3f}]"
        )
    print(f"  (reference: default order {np.mean([rr(q.default_rank) for q in base]):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
