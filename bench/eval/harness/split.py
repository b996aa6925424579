"""The evaluation over a split of corpora: pooled, per corpus, per kind, with paired intervals.

    runs = [CorpusRun(corpus, query_set, repository_id), ...]
    report = run_split(runs, split="report", k=10, configurations=..., compare=[("a", "b")])
    print(format_split_report(report))

Each corpus runs through ``run_ablation`` on its own repository (so a query only ever sees the
code it was written for), or, with ``every_repository``, over every repository the viewer sees
(a hit counts only in the question's own repository: what a search box with no ``repo:``
gives); the split's figures pool every query of every corpus (each question
weighs the same), and a comparison pairs the two configurations' reciprocal ranks query by query
and bootstraps the difference within each corpus (``bootstrap``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from bench.eval.harness.ablation import (
    ABLATION,
    AblationReport,
    Configuration,
    SearchFunction,
    run_ablation,
)
from bench.eval.harness.bootstrap import DEFAULT_RESAMPLES, PairedDifference, paired_bootstrap
from bench.eval.harness.corpora import Corpus
from bench.eval.harness.metrics import Metrics, QueryOutcome, compute_metrics, first_hit_rank
from bench.eval.harness.queries import QuerySet
from bench.eval.harness.report_text import fmt

if TYPE_CHECKING:
    from accounts.visibility import Viewer


@dataclass(frozen=True)
class CorpusRun:
    corpus: Corpus
    query_set: QuerySet
    repository_id: UUID
    context: dict[str, Any] = field(default_factory=dict)  # commit, chunks, ... for the report


@dataclass
class SplitReport:
    split: str
    k: int
    corpora: list[CorpusRun]
    per_corpus: dict[str, AblationReport]  # corpus name -> its ablation
    pooled: dict[str, Metrics]  # configuration name -> metrics over every query of the split
    skipped: dict[str, str] = field(default_factory=dict)  # configuration name -> why
    comparisons: list[PairedDifference] = field(default_factory=list)
    # per comparison (in the same order): kind -> the comparison over that kind's questions
    comparisons_by_kind: list[dict[str, PairedDifference]] = field(default_factory=list)
    every_repository: bool = False  # searched over every repository, not the corpus's alone

    def configuration_names(self) -> list[str]:
        first = next(iter(self.per_corpus.values()), None)
        return [c.name for c in first.configurations] if first else []

    def as_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "k": self.k,
            "every_repository": self.every_repository,
            "corpora": [
                {
                    "name": run.corpus.name,
                    "language": run.corpus.language,
                    "split": run.corpus.split,
                    "queries_file": run.corpus.queries,
                    "queries": len(run.query_set.queries),
                    **run.context,
                }
                for run in self.corpora
            ],
            "pooled": {name: metrics.as_dict() for name, metrics in self.pooled.items()},
            "skipped": self.skipped,
            "comparisons": [c.as_dict() for c in self.comparisons],
            "comparisons_by_kind": [
                {kind: c.as_dict() for kind, c in by_kind.items()}
                for by_kind in self.comparisons_by_kind
            ],
            "per_corpus": {name: report.as_dict() for name, report in self.per_corpus.items()},
        }


def reciprocal_ranks(outcomes: Sequence[QueryOutcome], k: int) -> list[float]:
    ranks = [first_hit_rank(outcome, k) for outcome in outcomes]
    return [1.0 / rank if rank else 0.0 for rank in ranks]


def _paired_scores(
    report: SplitReport, name: str
) -> tuple[list[tuple[str, str, str]], list[float]] | None:
    """(corpus, query id, kind) keys and reciprocal ranks of one configuration over the split."""
    keys: list[tuple[str, str, str]] = []
    scores: list[float] = []
    for corpus_name, ablation in report.per_corpus.items():
        found = next((c for c in ablation.configurations if c.name == name), None)
        if found is None or found.metrics is None:
            return None
        keys += [(corpus_name, o.query.id, o.query.kind) for o in found.outcomes]
        scores += reciprocal_ranks(found.outcomes, report.k)
    return keys, scores


def compare(
    report: SplitReport,
    a: str,
    b: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    kind: str | None = None,
) -> PairedDifference:
    """Paired bootstrap of MRR(b) - MRR(a) over the split's queries (or those of one kind),
    stratified by corpus."""
    left, right = _paired_scores(report, a), _paired_scores(report, b)
    for name, scores in ((a, left), (b, right)):
        if scores is None:
            reason = report.skipped.get(name, "it did not run")
            raise ValueError(f"cannot compare {name}: {reason}")
    assert left is not None and right is not None
    if left[0] != right[0]:
        raise ValueError(f"{a} and {b} did not run the same queries")
    chosen = [i for i, key in enumerate(left[0]) if kind is None or key[2] == kind]
    if not chosen:
        raise ValueError(f"no {kind} queries to compare")
    options: dict[str, Any] = {"resamples": resamples}
    if seed is not None:
        options["seed"] = seed
    return paired_bootstrap(
        [left[1][i] for i in chosen],
        [right[1][i] for i in chosen],
        strata=[left[0][i][0] for i in chosen],
        names=(a, b),
        **options,
    )


def compare_by_kind(
    report: SplitReport,
    a: str,
    b: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
) -> dict[str, PairedDifference]:
    """The comparison restricted to each kind of question in turn (small groups: wide intervals)."""
    scores = _paired_scores(report, a)
    kinds = sorted({key[2] for key in scores[0]}) if scores else []
    return {
        kind: compare(report, a, b, resamples=resamples, seed=seed, kind=kind) for kind in kinds
    }


def _prefixed(report: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda name: report(f"{prefix}: {name}")


def run_split(
    runs: Sequence[CorpusRun],
    *,
    split: str,
    k: int = 10,
    configurations: Sequence[Configuration] = ABLATION,
    with_llm: bool = False,
    comparisons: Sequence[tuple[str, str]] = (),
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    search: SearchFunction | None = None,
    on_progress: Callable[[str], None] | None = None,
    viewer: Viewer | None = None,
    every_repository: bool = False,
) -> SplitReport:
    """Every configuration over every corpus of the split, pooled, and the asked comparisons
    (``every_repository``: each corpus's questions searched over every repository)."""
    per_corpus: dict[str, AblationReport] = {}
    for run in runs:
        progress: Callable[[str], None] | None = None
        if on_progress is not None:
            progress = _prefixed(on_progress, run.corpus.name)
        per_corpus[run.corpus.name] = run_ablation(
            run.query_set,
            repo_ids=None if every_repository else [run.repository_id],
            k=k,
            with_llm=with_llm,
            configurations=configurations,
            search=search,
            on_progress=progress,
            viewer=viewer,
            home=run.repository_id if every_repository else None,
        )
    pooled: dict[str, Metrics] = {}
    skipped: dict[str, str] = {}
    for configuration in configurations:
        outcomes: list[QueryOutcome] = []
        for ablation in per_corpus.values():
            found = next(c for c in ablation.configurations if c.name == configuration.name)
            if found.metrics is None:
                skipped[configuration.name] = found.skipped
                break
            outcomes += found.outcomes
        else:
            pooled[configuration.name] = compute_metrics(outcomes, k)
    report = SplitReport(
        split, k, list(runs), per_corpus, pooled, skipped, every_repository=every_repository
    )
    for a, b in comparisons:
        report.comparisons.append(compare(report, a, b, resamples=resamples, seed=seed))
        report.comparisons_by_kind.append(
            compare_by_kind(report, a, b, resamples=resamples, seed=seed)
        )
    return report


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def format_split_report(report: SplitReport) -> str:
    """Markdown: pooled figures, MRR per corpus, MRR per kind, the comparisons."""
    k = report.k
    names = [run.corpus.name for run in report.corpora]
    total = sum(len(run.query_set.queries) for run in report.corpora)
    lines = [
        f"Split {report.split}: {len(names)} corpora ({', '.join(names)}), {total} queries, k={k}",
        "",
    ]
    if report.every_repository:
        lines[-1:] = [
            "Searched over every repository; a hit counts only in its question's own repository.",
            "",
        ]
    rows = []
    for name in report.configuration_names():
        m = report.pooled.get(name)
        if m is None:
            rows.append([name, f"skipped: {report.skipped.get(name, '')}", "", "", "", ""])
            continue
        rows.append(
            [
                name,
                fmt(m.mrr, percent=False),
                fmt(m.hit_at_1),
                fmt(m.hit_at_k),
                fmt(m.recall_at_k),
                f"{m.p50_ms:.0f} / {m.p95_ms:.0f}",
            ]
        )
    lines += _table(
        ["configuration", f"MRR@{k}", "hit@1", f"hit@{k}", f"recall@{k}", "p50 / p95 ms"], rows
    )
    ran = [name for name in report.configuration_names() if name in report.pooled]
    counts = {run.corpus.name: len(run.query_set.queries) for run in report.corpora}
    lines += ["", f"MRR@{k} per corpus (queries in brackets):", ""]
    rows = []
    for name in ran:
        cells = []
        for corpus in names:
            found = next(c for c in report.per_corpus[corpus].configurations if c.name == name)
            cells.append(fmt(found.metrics.mrr if found.metrics else None, percent=False))
        rows.append([name, *cells])
    lines += _table(["configuration", *(f"{c} ({counts[c]})" for c in names)], rows)
    kinds = sorted({kind for name in ran for kind in report.pooled[name].by_kind})
    if kinds and ran:
        first = report.pooled[ran[0]].by_kind
        lines += ["", f"MRR@{k} per kind, pooled over the split:", ""]
        rows = [
            [
                name,
                *(
                    fmt(report.pooled[name].by_kind.get(kind, {}).get("mrr"), percent=False)
                    for kind in kinds
                ),
            ]
            for name in ran
        ]
        header = [f"{kind} ({int(first.get(kind, {}).get('queries', 0))})" for kind in kinds]
        lines += _table(["configuration", *header], rows)
    if report.comparisons:
        lines += ["", "Paired bootstrap of the MRR difference (stratified by corpus):", ""]
        lines += [f"- {c.describe()}" for c in report.comparisons]
        for c, by_kind in zip(report.comparisons, report.comparisons_by_kind, strict=True):
            lines += ["", f"{c.b} - {c.a} per kind:", ""]
            rows = [
                [
                    kind,
                    str(d.pairs),
                    f"{d.mean_a:.3f}",
                    f"{d.mean_b:.3f}",
                    f"{d.difference:+.3f}",
                    f"[{d.low:+.3f}, {d.high:+.3f}]",
                ]
                for kind, d in by_kind.items()
            ]
            ci = f"{c.confidence * 100:.0f} % CI"
            lines += _table(["kind", "queries", c.a, c.b, "difference", ci], rows)
    warnings = [
        f"- {corpus}: {c.name}: {warning}"
        for corpus, ablation in report.per_corpus.items()
        for c in ablation.configurations
        for warning in c.warnings
    ]
    if warnings:
        lines += ["", "Warnings:", *warnings]
    return "\n".join(lines)
