"""The ablation report as text: a plain-text (also valid Markdown) table per configuration and
MRR by query kind, as ``bench/eval/run.py`` prints it."""

from __future__ import annotations

from bench.eval.harness.ablation import AblationReport


def fmt(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:.1f}" if percent else f"{value:.3f}"


def format_report(report: AblationReport) -> str:
    """A plain-text (also valid Markdown) table: one row per configuration."""
    k = report.k
    header = (
        f"| configuration | hit@1 | hit@{k} | recall@{k} | MRR | symbol-hit@{k} "
        f"| tests/docs share (all / code queries) | p50 ms | p95 ms |"
    )
    lines = [header, "|" + "---|" * 9]
    notes: list[str] = []
    for c in report.configurations:
        if c.metrics is None:
            lines.append(f"| {c.name} | skipped: {c.skipped} |" + " |" * 7)
            continue
        m = c.metrics
        lines.append(
            f"| {c.name} | {fmt(m.hit_at_1)} | {fmt(m.hit_at_k)} | {fmt(m.recall_at_k)} "
            f"| {fmt(m.mrr, percent=False)} | {fmt(m.symbol_hit_at_k)} "
            f"| {fmt(m.test_doc_share)} / {fmt(m.test_doc_share_code_queries)} "
            f"| {m.p50_ms:.1f} | {m.p95_ms:.1f} |"
        )
        notes.extend(f"- {c.name}: {warning}" for warning in c.warnings)
    for c in report.configurations:
        if c.context_recall is not None:
            lines.append(
                f"\n{c.name}: recall over the whole context {fmt(c.context_recall)} % "
                f"({c.context_size:.1f} snippets per question; the table scores its first {k})"
            )
    kinds = sorted({kind for c in report.configurations if c.metrics for kind in c.metrics.by_kind})
    ran = [c for c in report.configurations if c.metrics]
    if kinds and ran:
        lines += ["", f"MRR by query kind (queries per kind in brackets), k={k}:", ""]
        first = ran[0].metrics
        assert first is not None
        counts = {kind: int(first.by_kind.get(kind, {}).get("queries", 0)) for kind in kinds}
        lines.append("| configuration | " + " | ".join(f"{x} ({counts[x]})" for x in kinds) + " |")
        lines.append("|" + "---|" * (len(kinds) + 1))
        for c in ran:
            assert c.metrics is not None
            cells = [fmt(c.metrics.by_kind.get(x, {}).get("mrr"), percent=False) for x in kinds]
            lines.append(f"| {c.name} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Warnings:", *notes]
    skipped = [c for c in report.configurations if c.skipped]
    if skipped:
        lines += ["", *(f"- {c.name} skipped: {c.skipped}" for c in skipped)]
    return "\n".join(lines)
