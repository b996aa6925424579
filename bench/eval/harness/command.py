"""The evaluation command behind ``bench/eval/run.py``: an ablation over a labelled query set,
or over a split of the corpora manifest.

    python bench/eval/run.py --repo <uuid or name> --queries bench/eval/flask-queries.json --k 5 \
        [--json out.json] [--with-llm] [--configs fulltext,vector,hybrid]
    python bench/eval/run.py --split report [--k 10] [--configs hybrid,hybrid+scope] \
        [--compare hybrid,hybrid+scope] [--corpus NAME] [--json out.json] [--baseline old.json]
        [--every-repository]

With ``--split`` the corpora come from ``bench/eval/corpora.json`` (``tune``, ``report`` or
``all``; ``--corpus`` picks some by name); each must have been indexed under its name
(``bench/eval/index_corpus.py``): this command indexes nothing. The report pools the split's
queries, shows MRR@k per corpus and per kind, and for each ``--compare A,B`` a paired bootstrap
interval of MRR(B) - MRR(A); ``--baseline old.json`` pairs every configuration with the same
one in a report saved earlier (another code or index state: ``bench/eval/harness/compare.py``).
``--every-repository`` searches each question over every repository instead of its corpus's
alone (what a search box with no ``repo:`` does); a hit counts only in the question's own
repository.

It sees every repository, restricted ones too; ``--user NAME`` evaluates what that account would
see instead. A Django command class (its argument parsing and errors) that no app registers: the
product does not ship it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.visibility import Viewer
from bench.eval.harness.ablation import (
    ABLATION,
    Configuration,
    chat_unavailable_reason,
    run_ablation,
)
from bench.eval.harness.ask_checks import check_citations
from bench.eval.harness.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from bench.eval.harness.compare import ReportMismatch, compare_reports, format_comparison
from bench.eval.harness.corpora import ManifestError, load_manifest, select_corpora
from bench.eval.harness.queries import QuerySetError, load_query_set
from bench.eval.harness.report_text import format_report
from bench.eval.harness.split import CorpusRun, format_split_report, run_split
from indexing.models import Repository
from indexing.visible import visible_repositories
from search.management.viewer_option import add_user_option, viewer_from_options

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "bench" / "eval" / "corpora.json"


def find_repository(ref: str, viewer: Viewer) -> Repository:
    """A repository ``viewer`` may see by id, or by name when the name is unique."""
    visible = visible_repositories(viewer)
    try:
        repository = visible.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        matches = list(visible.filter(name=ref)[:2])
        if len(matches) > 1:
            raise CommandError(f"several repositories are named {ref!r}; pass the id") from None
        repository = matches[0] if matches else None
    if repository is None:
        raise CommandError(f"no repository {ref!r}")
    if not repository.active_generation:
        raise CommandError(f"repository {repository.name} has no indexed version yet")
    return repository


def parse_configurations(value: str | None) -> tuple[Configuration, ...]:
    """The configurations named in ``--configs`` (all of the ablation when empty)."""
    if not value:
        return ABLATION
    wanted = [name.strip() for name in value.split(",") if name.strip()]
    known = {c.name: c for c in ABLATION}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise CommandError(f"unknown configuration(s): {', '.join(unknown)}")
    return tuple(known[name] for name in wanted)


def parse_comparisons(
    values: list[str], configurations: tuple[Configuration, ...]
) -> list[tuple[str, str]]:
    """``--compare A,B`` pairs; both must be among the configurations that run."""
    running = {c.name for c in configurations}
    pairs = []
    for value in values:
        names = [name.strip() for name in value.split(",")]
        if len(names) != 2 or not all(names) or names[0] == names[1]:
            raise CommandError(f"--compare takes two different configurations A,B, not {value!r}")
        missing = [name for name in names if name not in running]
        if missing:
            raise CommandError(
                f"--compare {value}: {', '.join(missing)} not among the configurations run"
                " (see --configs)"
            )
        pairs.append((names[0], names[1]))
    return pairs


def split_runs(manifest: Path, split: str, names: list[str], viewer: Viewer) -> list[CorpusRun]:
    """The corpora of the split with their query sets and indexed repositories (as ``viewer``
    sees them)."""
    try:
        corpora = select_corpora(load_manifest(manifest), split=split, names=names)
    except (OSError, ManifestError) as error:
        raise CommandError(str(error)) from None
    runs = []
    for corpus in corpora:
        try:
            query_set = load_query_set(ROOT / corpus.queries)
        except (OSError, QuerySetError) as error:
            raise CommandError(f"corpus {corpus.name}: {error}") from None
        repository = visible_repositories(viewer).filter(name=corpus.name).first()
        if repository is None or not repository.active_generation:
            raise CommandError(
                f"corpus {corpus.name} is not indexed: run"
                f" bench/eval/index_corpus.py --name {corpus.name}"
            )
        context = {
            "repository": str(repository.pk),
            "commit": repository.last_indexed_commit,
            "files": repository.file_count,
            "chunks": repository.chunk_count,
            "embedded": repository.embedded_count,
        }
        runs.append(CorpusRun(corpus, query_set, repository.pk, context))
    return runs


class EvalCommand(BaseCommand):
    help = (
        "Evaluate search configurations (an ablation) on a labelled query set or a split. Sees"
        " every repository, restricted ones too, unless --user NAME is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repo", help="repository id or unique name (without --split)")
        parser.add_argument("--queries", type=Path, help="query set (JSON; without --split)")
        parser.add_argument(
            "--split",
            choices=("tune", "report", "all"),
            help="evaluate the manifest's corpora of this split instead of --repo/--queries",
        )
        parser.add_argument(
            "--corpus", action="append", default=[], help="with --split: only this corpus"
        )
        parser.add_argument(
            "--every-repository",
            action="store_true",
            help="with --split: search every repository, not the corpus's alone (a hit counts"
            " only in the question's own repository)",
        )
        parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpora manifest")
        parser.add_argument(
            "--k", type=int, help="results per query (default 10 with --split, else 5)"
        )
        parser.add_argument("--json", type=Path, help="also write the report as JSON here")
        parser.add_argument(
            "--with-llm",
            action="store_true",
            help="also run expansion, rerank and HyDE, and check ask's citations",
        )
        parser.add_argument(
            "--ask-questions",
            type=int,
            default=10,
            help="with --with-llm: how many of the queries to ask for the citation check",
        )
        parser.add_argument(
            "--configs",
            help="comma-separated subset of: " + ", ".join(c.name for c in ABLATION),
        )
        parser.add_argument(
            "--compare",
            action="append",
            default=[],
            metavar="A,B",
            help="with --split: paired bootstrap interval of MRR(B) - MRR(A) (repeatable)",
        )
        parser.add_argument(
            "--baseline",
            type=Path,
            help="with --split: a saved --json split report; pair each configuration with it",
        )
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
        add_user_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        k = options["k"] if options["k"] is not None else (10 if options["split"] else 5)
        if not 1 <= k <= 100:
            raise CommandError("--k must be between 1 and 100")
        configurations = parse_configurations(options["configs"])
        viewer = viewer_from_options(options)
        if options["split"]:
            self.handle_split(options, k, configurations, viewer)
            return
        if options["compare"] or options["corpus"] or options["every_repository"]:
            raise CommandError("--compare, --corpus and --every-repository need --split")
        if not options["repo"] or not options["queries"]:
            raise CommandError("give --split, or both --repo and --queries")
        try:
            query_set = load_query_set(options["queries"])
        except (OSError, QuerySetError) as error:
            raise CommandError(str(error)) from None
        repository = find_repository(options["repo"], viewer)
        self.stdout.write(
            f"repository {repository.name} ({repository.pk}) at {repository.last_indexed_commit[:12]}:"
            f" {repository.chunk_count} chunks, {repository.embedded_count} with vectors;"
            f" {len(query_set.queries)} queries, k={k}"
        )
        report = run_ablation(
            query_set,
            repo_ids=[repository.pk],
            k=k,
            with_llm=options["with_llm"],
            configurations=configurations,
            on_progress=lambda name: self.stderr.write(f"running {name} ..."),
            viewer=viewer,
        )
        report.context = {
            "repository": str(repository.pk),
            "repository_name": repository.name,
            "commit": repository.last_indexed_commit,
            "chunks": repository.chunk_count,
            "embedded": repository.embedded_count,
            "query_file": str(options["queries"]),
            "corpus": query_set.corpus,
        }
        if options["with_llm"] and chat_unavailable_reason() is None:
            questions = [query.query for query in query_set.queries[: options["ask_questions"]]]
            self.stderr.write(f"asking {len(questions)} questions for the citation check ...")
            check = check_citations(questions, repo_ids=[repository.pk], k=8, viewer=viewer)
            report.context["ask_citations"] = check.as_dict()
        self.stdout.write(format_report(report))
        citations = report.context.get("ask_citations")
        if citations:
            self.stdout.write(
                f"ask: {citations['faithful']}/{citations['answered']} answers cite only chunks"
                f" that were in their context ({citations['rate'] * 100:.0f} %);"
                f" {citations['removed']} invented citations removed"
            )
        if options["json"]:
            options["json"].write_text(json.dumps(report.as_dict(), indent=1) + "\n")
            self.stdout.write(f"wrote {options['json']}")

    def handle_split(
        self,
        options: dict[str, Any],
        k: int,
        configurations: tuple[Configuration, ...],
        viewer: Viewer,
    ) -> None:
        if options["repo"] or options["queries"]:
            raise CommandError("--split reads the manifest: leave out --repo and --queries")
        if options["resamples"] < 1:
            raise CommandError("--resamples must be at least 1")
        comparisons = parse_comparisons(options["compare"], configurations)
        runs = split_runs(options["manifest"], options["split"], options["corpus"], viewer)
        for run in runs:
            self.stdout.write(
                f"{run.corpus.name} ({run.corpus.language}, {run.corpus.split}) at"
                f" {str(run.context['commit'])[:12]}: {run.context['chunks']} chunks,"
                f" {run.context['embedded']} with vectors; {len(run.query_set.queries)} queries"
            )
        try:
            report = run_split(
                runs,
                split=options["split"],
                k=k,
                configurations=configurations,
                with_llm=options["with_llm"],
                comparisons=comparisons,
                resamples=options["resamples"],
                seed=options["seed"],
                on_progress=lambda name: self.stderr.write(f"running {name} ..."),
                viewer=viewer,
                every_repository=options["every_repository"],
            )
        except ValueError as error:  # a comparison whose configuration was skipped
            raise CommandError(str(error)) from None
        self.stdout.write(format_split_report(report))
        data = report.as_dict()
        if options["json"]:
            options["json"].write_text(json.dumps(data, indent=1) + "\n")
            self.stdout.write(f"wrote {options['json']}")
        if options["baseline"]:
            self.compare_with_baseline(options["baseline"], data, report, options["seed"])

    def compare_with_baseline(
        self, path: Path, data: dict[str, Any], report: Any, seed: int
    ) -> None:
        try:
            before = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"--baseline {path}: {error}") from None
        self.stdout.write(f"\nAgainst the baseline {path} (after - before, paired by question):")
        saved = before.get("pooled") if isinstance(before.get("pooled"), dict) else {}
        for name in report.pooled:
            if name not in saved:
                self.stdout.write(f"\n- {name}: not in the baseline, not compared")
                continue
            try:
                overall, by_kind = compare_reports(before, data, name, seed=seed)
            except ReportMismatch as error:
                raise CommandError(f"--baseline {path}: {error}") from None
            self.stdout.write("\n" + format_comparison(overall, by_kind))
