"""Train and cross-validate learned fusion offline, from lists captured by ``ltr_capture.py``.

    .venv/bin/python bench/eval/ltr_train.py bench/results/ltr-tune.json            # CV only
    .venv/bin/python bench/eval/ltr_train.py bench/results/ltr-tune.json --write    # + weights

For every captured question the default pipeline is replayed with its own functions
(``fuse_ranked_lists`` -> ``place_left_out`` -> ``apply_signals``, lists cut to ``--depth``) to
get the pool of candidates and the default order; ``search.ranking.ordering.features`` gives each
candidate's feature row, and a candidate is relevant when it overlaps an expected range (the
harness's hit rule). The model is linear, ``w . standardise(x)``, trained with a listwise
softmax loss (ListNet: cross-entropy between the softmax of the scores over the pool and the
uniform distribution over the relevant candidates) plus ``lambda |w|^2``, by full-batch
gradient descent (Adam); questions with no relevant candidate in the pool are left out of the
loss. ``lambda`` is chosen by leave-one-corpus-out cross-validation inside the captured corpora
(MRR@10 of the held-out corpus); ``--write`` trains on all of them with the chosen ``lambda``
and writes ``search/ranking/learned_weights.json``.

Only tune-half captures belong here: the report half is judged once, through the pipeline.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LAMBDAS = (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
K = 10


@dataclass
class Question:
    corpus: str
    id: str
    kind: str
    x: np.ndarray  # pool x features
    relevant: np.ndarray  # bool per pool row
    default_rank: int  # 1-based first relevant rank in the default top 30 (0: none)
    simulated_ok: bool  # the replayed default top 10 equals the pipeline's


def _setup() -> None:

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()


def replay(
    q: dict[str, Any], depth: int, facts: dict[int, Any]
) -> tuple[list[Any], list[Any], Any]:
    """The default pipeline replayed for one captured question: (pool in the default order,
    every list -- scoped and left out, cut to ``depth`` --, the question's shape)."""
    from search.ranking.fusion import RankedList, fuse_ranked_lists, place_left_out
    from search.ranking.ordering import QuestionShape, apply_signals
    from search.retrieval.scope import LEFT_OUT_BY_DEFAULT

    def lists_of(raw: Sequence[dict[str, Any]]) -> list[RankedList]:
        return [
            RankedList(
                rl["method"],
                rl["query_index"],
                [(int(c), float(s)) for c, s in rl["ranked"][:depth]],
            )
            for rl in raw
        ]

    lists, left_out = lists_of(q["lists"]), lists_of(q["left_out"])
    fused = fuse_ranked_lists(lists, top=None)
    place = dict(q["place_kwargs"], depth=depth)
    fused, _ = place_left_out(fused, lists, left_out, **place)
    kwargs = dict(q["signal_kwargs"])
    pool, _ = apply_signals(fused, facts, **kwargs, top=max(len(fused), 1))
    scope = q["scope"]
    shape = QuestionShape(
        q["query"],
        prefer_tests=scope["prefer_tests"],
        prefer_docs=scope["prefer_docs"],
        tests_left_out=not scope["include_tests"] and scope["tests_reason"] == LEFT_OUT_BY_DEFAULT,
        docs_left_out=not scope["include_docs"] and scope["docs_reason"] == LEFT_OUT_BY_DEFAULT,
        usage=scope["docs_reason"].startswith("usage question"),
    )
    return pool, [*lists, *left_out], shape


def overlaps(row: dict[str, Any], expected: Sequence[Sequence[Any]]) -> bool:
    """The harness's hit rule: the chunk overlaps an expected (path, start, end) range."""
    return any(
        row["path"] == p and row["start_line"] <= e and row["end_line"] >= s for p, s, e in expected
    )


def chunk_facts(repository: str, row: dict[str, Any]) -> Any:
    """``ChunkFacts`` of a captured chunk row (path, lines, kind, test/doc, symbol)."""
    from search.retrieval.hydrate import ChunkFacts
    from search.retrieval.query import normalise_symbol

    return ChunkFacts(
        f"{repository}/{row['path']}",
        row["is_test"],
        row["is_doc"],
        normalise_symbol(row["symbol"]),
        row["end_line"] - row["start_line"] + 1,
        row["kind"],
    )


def build_questions(path: Path, depth: int) -> list[Question]:
    from search.ranking.ordering import features

    data = json.loads(path.read_text())
    out: list[Question] = []
    for corpus in data["corpora"]:
        repo = corpus["repository"]
        chunks = corpus["chunks"]
        facts = {int(cid): chunk_facts(repo, c) for cid, c in chunks.items()}
        for q in corpus["questions"]:
            pool, lists, shape = replay(q, depth, facts)
            rows = features(pool, lists, facts, shape)
            relevant = np.array(
                [overlaps(chunks[str(c.chunk_id)], q["expected"]) for c in pool], dtype=bool
            )
            default_top = [c.chunk_id for c in pool[:K]]
            out.append(
                Question(
                    corpus["corpus"],
                    q["id"],
                    q["kind"],
                    np.array(rows, dtype=float).reshape(len(pool), -1),
                    relevant,
                    _first(relevant[:30]),
                    default_top == q["default_hits"][:K],
                )
            )
    return out


def _first(relevant: np.ndarray) -> int:
    hits = np.flatnonzero(relevant[:K])
    return int(hits[0]) + 1 if hits.size else 0


def rr(rank: int) -> float:
    return 1.0 / rank if rank else 0.0


def order_rank(q: Question, w: np.ndarray, mean: np.ndarray, std: np.ndarray) -> int:
    if len(q.x) == 0:
        return 0
    s = _standard(q.x, mean, std) @ w
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:30]
    return _first(q.relevant[order])


LOSS = "listnet"  # or "pairwise" (RankNet: logistic loss on relevant-over-other pairs)
DROPPED: tuple[int, ...] = ()  # feature columns held at their mean (--drop)


def train(
    qs: Sequence[Question], lam: float, mean: np.ndarray, std: np.ndarray, steps: int = 1500
) -> np.ndarray:
    usable = [q for q in qs if q.relevant.any() and not q.relevant.all()]
    xs = [_standard(q.x, mean, std) for q in usable]
    targets = [q.relevant / q.relevant.sum() for q in usable]
    w = np.zeros(len(mean))
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    lr, b1, b2 = 0.05, 0.9, 0.999
    for t in range(1, steps + 1):
        grad = 2 * lam * w
        for x, target in zip(xs, targets, strict=True):
            s = x @ w
            if LOSS == "pairwise":
                rel = target > 0
                diff = s[rel][:, None] - s[~rel][None, :]  # relevant minus other
                g = -1.0 / (1.0 + np.exp(diff))  # d/d diff of log(1 + exp(-diff))
                g /= g.size
                grad += (x[rel].T @ g.sum(axis=1) - x[~rel].T @ g.sum(axis=0)) / len(xs)
                continue
            p = np.exp(s - s.max())
            p /= p.sum()
            grad += x.T @ (p - target) / len(xs)
        grad[list(DROPPED)] = 0.0
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        w -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + 1e-8)
    return w


def _standard(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    z = (x - mean) / std
    if DROPPED:
        z[:, list(DROPPED)] = 0.0
    return z


def standardiser(qs: Sequence[Question]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.vstack([q.x for q in qs if len(q.x)])
    mean = rows.mean(axis=0)
    std = rows.std(axis=0)
    std[std < 1e-9] = 1.0
    return mean, std


def bootstrap(base: list[float], other: list[float], strata: list[str]) -> str:
    from bench.eval.harness.bootstrap import paired_bootstrap

    found = paired_bootstrap(base, other, strata=strata, resamples=2000, seed=16)
    return f"{found.difference:+.3f} [{found.low:+.3f}, {found.high:+.3f}]"


def cross_validate(qs: list[Question], lambdas: Sequence[float]) -> dict[float, list[float]]:
    corpora = sorted({q.corpus for q in qs})
    results: dict[float, list[float]] = {}
    for lam in lambdas:
        ranks: dict[str, int] = {}
        for held in corpora:
            fit = [q for q in qs if q.corpus != held]
            mean, std = standardiser(fit)
            w = train(fit, lam, mean, std)
            for q in qs:
                if q.corpus == held:
                    ranks[q.id + "@" + q.corpus] = order_rank(q, w, mean, std)
        results[lam] = [rr(ranks[q.id + "@" + q.corpus]) for q in qs]
    return results


def report(qs: list[Question], learned: list[float], label: str) -> None:
    base = [rr(q.default_rank) for q in qs]
    strata = [q.corpus for q in qs]
    print(
        f"\n{label}: default {np.mean(base):.3f} -> learned {np.mean(learned):.3f}, "
        f"{bootstrap(base, learned, strata)}"
    )
    for group, key in (("corpus", "corpus"), ("kind", "kind")):
        for value in sorted({getattr(q, key) for q in qs}):
            idx = [i for i, q in enumerate(qs) if getattr(q, key) == value]
            b = [base[i] for i in idx]
            o = [learned[i] for i in idx]
            print(
                f"  {group} {value} ({len(idx)}): {np.mean(b):.3f} -> {np.mean(o):.3f}, "
                f"{bootstrap(b, o, [strata[i] for i in idx])}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("captures", nargs="+", type=Path)
    parser.add_argument("--depth", type=int, default=50, help="list depth replayed (default 50)")
    parser.add_argument("--lambdas", default=",".join(str(x) for x in LAMBDAS))
    parser.add_argument("--loss", choices=("listnet", "pairwise"), default="listnet")
    parser.add_argument("--drop", default="", help="comma-separated features to leave out")
    parser.add_argument("--write", action="store_true", help="write learned_weights.json")
    parser.add_argument("--out", type=Path, default=ROOT / "search/ranking/learned_weights.json")
    args = parser.parse_args(argv)
    _setup()
    from search.ranking.ordering import FEATURES

    global LOSS, DROPPED
    LOSS = args.loss
    DROPPED = tuple(FEATURES.index(name) for name in args.drop.split(",") if name)
    qs = [q for path in args.captures for q in build_questions(path, args.depth)]
    ok = sum(q.simulated_ok for q in qs)
    print(f"{len(qs)} questions; replayed default top {K} equals the pipeline's for {ok}")
    print(
        f"pool size: mean {np.mean([len(q.x) for q in qs]):.0f}; questions with a relevant "
        f"candidate in the pool: {sum(q.relevant.any() for q in qs)}"
    )
    lambdas = [float(x) for x in args.lambdas.split(",")]
    cv = cross_validate(qs, lambdas)
    print(
        "\nleave-one-corpus-out MRR@10 by lambda (default "
        f"{np.mean([rr(q.default_rank) for q in qs]):.3f}):"
    )
    for lam, values in cv.items():
        per = {
            c: np.mean([v for v, q in zip(values, qs, strict=True) if q.corpus == c])
            for c in sorted({q.corpus for q in qs})
        }
        print(
            f"  lambda {lam:g}: {np.mean(values):.3f}  "
            + "  ".join(f"{c} {m:.3f}" for c, m in per.items())
        )
    best = max(lambdas, key=lambda lam: (round(float(np.mean(cv[lam])), 4), lam))
    report(
        qs, cv[best], f"cross-validated (lambda {best:g}, each corpus by a model not trained on it)"
    )
    if args.write:
        mean, std = standardiser(qs)
        w = train(qs, best, mean, std)
        fitted = [rr(order_rank(q, w, mean, std)) for q in qs]
        report(qs, fitted, "trained on all (in-sample, optimistic)")
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        args.out.write_text(
            json.dumps(
                {
                    "features": list(FEATURES),
                    "weights": [round(float(x), 6) for x in w],
                    "means": [round(float(x), 6) for x in mean],
                    "stds": [round(float(x), 6) for x in std],
                    "meta": {
                        "trained_by": "bench/eval/ltr_train.py",
                        "captures": [str(p) for p in args.captures],
                        "corpora": sorted({q.corpus for q in qs}),
                        "questions": len(qs),
                        "depth": args.depth,
                        "lambda": best,
                        "loss": LOSS,
                        "dropped": [FEATURES[i] for i in DROPPED],
                        "commit": commit,
                    },
                },
                indent=1,
            )
            + "\n"
        )
        print(f"\nwrote {args.out}")
        for name, weight in sorted(zip(FEATURES, w, strict=True), key=lambda p: -abs(p[1])):
            print(f"  {name:18s} {weight:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
