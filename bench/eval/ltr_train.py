"""Train and cross-validate learned fusion offline, from lists captured by ``ltr_capture.py``.

    .venv/bin/python bench/eval/ltr_train.py bench/results/ltr-tune.json            # CV only
    .venv/bin/python bench/eval/ltr_train.py bench/results/ltr-tune.json --write    # + weights

For every captured question the default pipeline is replayed with its own functions
(``bench/eval/harness/ltr_replay.py``: ``fuse_ranked_lists`` -> ``place_left_out`` ->
``apply_signals``, lists cut to ``--depth``) to get the pool of candidates in the rules' order;
``search.ranking.ordering.features`` (plus any ``--extra`` candidate features) gives each
candidate's feature row, and a candidate is relevant when it overlaps an expected range (the
harness's hit rule). Every order scored here, the shipped model's and the trained ones, is cut to
30 and its best 10 reordered by the cross-encoder from the logits the capture stored, as the live
stack does (for the questions where the live stage ran); the shipped model's replay is first
checked against the live order and hits the capture kept, and is the baseline of every
comparison. The model is linear, ``w . standardise(x)``, trained with a listwise
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
from dataclasses import dataclass, field, replace
from pathlib import Path

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
    default_rank: int  # 1-based first relevant rank in the rules' top 10 (0: none)
    ids: list[int] = field(default_factory=list)  # chunk id per pool row
    query: str = ""
    logits: dict[int, float] | None = None  # the cross-encoder's, when the live stage ran
    live_rank: int = 0  # first relevant rank in the live hits (what run.py scores)
    live_order: list[int] | None = None  # the live learned order (fusion stage, before the CE)
    live_hits: list[int] = field(default_factory=list)


def _setup() -> None:

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()


def build_questions(path: Path, depth: int, extra: Sequence[str] = ()) -> list[Question]:
    from bench.eval.harness.ltr_replay import EXTRA_FEATURES, chunk_facts, overlaps, replay
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
            columns = [EXTRA_FEATURES[name](pool, facts) for name in extra]
            rows = [row + [col[i] for col in columns] for i, row in enumerate(rows)]
            relevant = np.array(
                [overlaps(chunks[str(c.chunk_id)], q["expected"]) for c in pool], dtype=bool
            )
            hit = {int(cid) for cid, row in chunks.items() if overlaps(row, q["expected"])}
            live_hits = q.get("live_hits", q.get("default_hits", []))
            ran = q.get("live_cross_encoder", {}).get("status") == "ran"
            out.append(
                Question(
                    corpus["corpus"],
                    q["id"],
                    q["kind"],
                    np.array(rows, dtype=float).reshape(len(pool), -1),
                    relevant,
                    _first(relevant[:30]),
                    [c.chunk_id for c in pool],
                    q["query"],
                    {int(c): float(v) for c, v in q.get("cross_encoder", {}).items()}
                    if ran
                    else None,
                    next((i for i, c in enumerate(live_hits[:K], 1) if c in hit), 0),
                    q.get("live_order"),
                    live_hits,
                )
            )
    return out


def _first(relevant: np.ndarray) -> int:
    hits = np.flatnonzero(relevant[:K])
    return int(hits[0]) + 1 if hits.size else 0


def rr(rank: int) -> float:
    return 1.0 / rank if rank else 0.0


def ordered(q: Question, scores: np.ndarray) -> list[int]:
    """Pool rows by ``scores`` (ties: the rules' order), the best 30, then the cross-encoder's
    reorder of the best 10 as the live stack runs it (when it ran live for this question)."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:30]
    if q.logits is None:
        return order
    from bench.eval.harness.ltr_replay import cross_encoder_reorder
    from search.types import SearchTuning

    row = {cid: i for i, cid in enumerate(q.ids)}
    ids = cross_encoder_reorder(q.query, [q.ids[i] for i in order], q.logits, SearchTuning())
    return order if ids is None else [row[cid] for cid in ids]


def order_rank(q: Question, w: np.ndarray, mean: np.ndarray, std: np.ndarray) -> int:
    if len(q.x) == 0:
        return 0
    return _first(q.relevant[ordered(q, _standard(q.x, mean, std) @ w)])


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


def report(qs: list[Question], learned: list[float], label: str, base: list[float]) -> None:
    strata = [q.corpus for q in qs]
    print(
        f"\n{label}: live {np.mean(base):.3f} -> learned {np.mean(learned):.3f}, "
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


def check_replay(qs: list[Question]) -> list[float]:
    """Print how often the shipped model's replayed order equals the live one (the fusion
    stage's 30, and the 10 hits after the cross-encoder); the replayed reciprocal ranks."""
    from search.ranking.ordering import FEATURES, default_model

    model = default_model()
    n = len(FEATURES)
    same_order = same_hits = checked = 0
    replayed: list[float] = []
    for q in qs:
        scores = np.array(model.scores(q.x[:, :n].tolist())) if len(q.x) else np.zeros(0)
        rows = ordered(q, scores)
        replayed.append(rr(_first(q.relevant[rows])))
        if q.live_order is None:
            continue
        checked += 1
        fusion = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:30]
        same_order += [q.ids[i] for i in fusion] == q.live_order[:30]
        same_hits += [q.ids[i] for i in rows[:K]] == q.live_hits[:K]
    print(
        f"replay of the shipped model: learned order (fusion's 30) equals the live one for "
        f"{same_order} of {checked}; top {K} after the cross-encoder equals the live hits for "
        f"{same_hits} of {checked}"
    )
    live = [rr(q.live_rank) for q in qs]
    rules_ce = [rr(_first(q.relevant[ordered(q, -np.arange(len(q.x)))])) for q in qs]
    print(
        f"MRR@{K}: rules {np.mean([rr(q.default_rank) for q in qs]):.3f} (with the "
        f"cross-encoder {np.mean(rules_ce):.3f}), shipped model replayed {np.mean(replayed):.3f}, "
        f"live hits {np.mean(live):.3f}"
    )
    return replayed


def _recipe_cross_validated(qs: list[Question]) -> tuple[list[float], str]:
    """Each question's reciprocal rank under the shipped model's recipe (its features, loss,
    lambda and dropped features, from its meta), cross-validated by corpus."""
    from search.ranking.ordering import FEATURES, default_model

    global LOSS, DROPPED  # the trainer's settings, restored below
    meta = default_model().meta
    chosen = LOSS, DROPPED
    LOSS = meta.get("loss", "listnet")
    DROPPED = tuple(FEATURES.index(name) for name in meta.get("dropped", []))
    lam = float(meta["lambda"])
    shipped = [replace(q, x=q.x[:, : len(FEATURES)]) for q in qs]
    try:
        return cross_validate(shipped, [lam])[lam], f"{LOSS}, lambda {lam:g}"
    finally:
        LOSS, DROPPED = chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("captures", nargs="+", type=Path)
    parser.add_argument("--depth", type=int, default=50, help="list depth replayed (default 50)")
    parser.add_argument("--lambdas", default=",".join(str(x) for x in LAMBDAS))
    parser.add_argument("--loss", choices=("listnet", "pairwise"), default="listnet")
    parser.add_argument("--drop", default="", help="comma-separated features to leave out")
    parser.add_argument(
        "--extra", default="", help="comma-separated features of ltr_replay.EXTRA_FEATURES to add"
    )
    parser.add_argument(
        "--against-recipe",
        action="store_true",
        help="compare with the shipped model's recipe (features, loss, lambda) cross-validated as"
        " the candidate is, not with the shipped model (trained on all the tune half: in-sample)",
    )
    parser.add_argument("--write", action="store_true", help="write learned_weights.json")
    parser.add_argument("--out", type=Path, default=ROOT / "search/ranking/learned_weights.json")
    args = parser.parse_args(argv)
    _setup()
    from search.ranking.ordering import FEATURES

    global LOSS, DROPPED
    LOSS = args.loss
    extra = [name for name in args.extra.split(",") if name]
    names = [*FEATURES, *extra]
    DROPPED = tuple(names.index(name) for name in args.drop.split(",") if name)
    qs = [q for path in args.captures for q in build_questions(path, args.depth, extra)]
    print(f"{len(qs)} questions")
    base = check_replay(qs)
    print(
        f"pool size: mean {np.mean([len(q.x) for q in qs]):.0f}; questions with a relevant "
        f"candidate in the pool: {sum(q.relevant.any() for q in qs)}"
    )
    lambdas = [float(x) for x in args.lambdas.split(",")]
    cv = cross_validate(qs, lambdas)
    print(f"\nleave-one-corpus-out MRR@10 by lambda (shipped model {np.mean(base):.3f}):")
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
    label = f"cross-validated (lambda {best:g}, each corpus by a model not trained on it)"
    if args.against_recipe:  # the shipped recipe, cross-validated too: no in-sample edge
        base, recipe = _recipe_cross_validated(qs)
        label += f"; against the shipped recipe cross-validated ({recipe})"
    report(qs, cv[best], label, base)
    if args.write:
        mean, std = standardiser(qs)
        w = train(qs, best, mean, std)
        fitted = [rr(order_rank(q, w, mean, std)) for q in qs]
        report(qs, fitted, "trained on all (in-sample, optimistic)", base)
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        args.out.write_text(
            json.dumps(
                {
                    "features": names,
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
                        "dropped": [names[i] for i in DROPPED],
                        "commit": commit,
                    },
                },
                indent=1,
            )
            + "\n"
        )
        print(f"\nwrote {args.out}")
        for name, weight in sorted(zip(names, w, strict=True), key=lambda p: -abs(p[1])):
            print(f"  {name:18s} {weight:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
