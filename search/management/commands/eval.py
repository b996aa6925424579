"""``manage.py eval``: run the evaluation ablation over a labelled query set.

    manage.py eval --repo <uuid or name> --queries bench/eval/flask-queries.json --k 5 \
        [--json out.json] [--with-llm] [--configs fulltext,vector,hybrid]
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexing.models import Repository
from search.ask.evaluation import check_citations
from search.evaluation import ABLATION, chat_unavailable_reason, format_report, run_ablation
from search.evaluation_queries import QuerySetError, load_query_set


def find_repository(ref: str) -> Repository:
    """A repository by id, or by name when the name is unique."""
    try:
        repository = Repository.objects.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        matches = list(Repository.objects.filter(name=ref)[:2])
        if len(matches) > 1:
            raise CommandError(f"several repositories are named {ref!r}; pass the id") from None
        repository = matches[0] if matches else None
    if repository is None:
        raise CommandError(f"no repository {ref!r}")
    if not repository.active_generation:
        raise CommandError(f"repository {repository.name} has no indexed version yet")
    return repository


class Command(BaseCommand):
    help = "Evaluate search configurations (an ablation) on a labelled query set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repo", required=True, help="repository id or unique name")
        parser.add_argument("--queries", required=True, type=Path, help="query set (JSON)")
        parser.add_argument("--k", type=int, default=5, help="results per query (default 5)")
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

    def handle(self, *args: Any, **options: Any) -> None:
        k = options["k"]
        if not 1 <= k <= 100:
            raise CommandError("--k must be between 1 and 100")
        try:
            query_set = load_query_set(options["queries"])
        except (OSError, QuerySetError) as error:
            raise CommandError(str(error)) from None
        repository = find_repository(options["repo"])
        configurations = ABLATION
        if options["configs"]:
            wanted = [name.strip() for name in options["configs"].split(",") if name.strip()]
            known = {c.name: c for c in ABLATION}
            unknown = [name for name in wanted if name not in known]
            if unknown:
                raise CommandError(f"unknown configuration(s): {', '.join(unknown)}")
            configurations = tuple(known[name] for name in wanted)
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
            check = check_citations(questions, repo_ids=[repository.pk], k=8)
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
