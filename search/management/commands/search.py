"""``manage.py search "query" [--repo ID|NAME] [--limit N] [--json]``: search from a terminal.

Prints ``repo:path:start-end  symbol`` then the first lines of each snippet; ``--json`` prints
the same document as ``POST /api/search`` for scripts. The trace goes to stderr unless --quiet.
An operator tool: it searches every repository, restricted ones too, unless ``--user NAME``
says whose view to take.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reposearch.domain_errors import DomainError
from search import contract
from search.management.viewer_option import add_user_option, viewer_from_options
from search.response import search_body
from search.router import SearchCall, SearchOutcome, run_search
from search.serializers import MAX_LIMIT, MAX_QUERY_CHARS, SearchResponseSerializer

SNIPPET_LINES = 6


class Command(BaseCommand):
    help = (
        "Search the indexed repositories (hybrid full-text + vector search). Sees every"
        " repository, restricted ones too, unless --user NAME is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument(
            "--repo", action="append", default=[], help="Repository id or name (repeat)."
        )
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--language", action="append", default=[])
        parser.add_argument("--path", action="append", default=[], help="Path glob (repeat).")
        parser.add_argument("--tests", choices=["auto", "yes", "no"], default="auto")
        parser.add_argument("--docs", choices=["auto", "yes", "no"], default="auto")
        parser.add_argument("--no-bm25", action="store_true")
        parser.add_argument("--no-vector", action="store_true")
        parser.add_argument("--rerank", action="store_true")
        parser.add_argument("--expand", action="store_true")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON document.")
        parser.add_argument("--quiet", action="store_true", help="No trace on stderr.")
        add_user_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        query = options["query"].strip()
        if not query:
            raise CommandError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise CommandError(f"the query is over {MAX_QUERY_CHARS} characters")
        if not 1 <= options["limit"] <= MAX_LIMIT:
            raise CommandError(f"--limit must be between 1 and {MAX_LIMIT}")
        viewer = viewer_from_options(options)
        try:  # ids or names, as POST /api/search's repo_ids
            repo_ids = contract.repository_ids(options["repo"], viewer)
        except DomainError as exc:
            raise CommandError(f"--repo: {exc}") from None
        tristate = {"auto": None, "yes": True, "no": False}
        request = contract.search_request(
            {
                "query": query,
                "limit": options["limit"],
                "use_bm25": not options["no_bm25"],
                "use_vector": not options["no_vector"],
                "use_rerank": options["rerank"],
                "use_expansion": options["expand"],
                "repo_ids": repo_ids,
                "languages": options["language"],
                "paths": options["path"],
                "include_tests": tristate[options["tests"]],
                "include_docs": tristate[options["docs"]],
            },
            viewer=viewer,
        )
        try:
            outcome = run_search(SearchCall(request))
        except DomainError as exc:  # what the API answers 4xx: an unknown branch, a bad glob...
            raise CommandError(str(exc)) from None
        if options["json"]:
            body = search_body(outcome, request.limit)
            self.stdout.write(json.dumps(SearchResponseSerializer(body).data, indent=2))
            return
        for notice in outcome.notices:  # filters that matched no file, or that had no value
            self.stderr.write(notice["message"])
        if outcome.exact is not None:
            self._write_exact(outcome, quiet=options["quiet"])
            return
        if outcome.files is not None:  # type:file
            for found in outcome.files.hits:
                self.stdout.write(f"{found.file.repo_name}:{found.file.path}")
            if not outcome.files.hits:
                self.stdout.write("no results")
            return
        for definition in outcome.definitions or []:
            self.stdout.write(
                f"{definition.repo_name}:{definition.path}:{definition.start_line}"
                f"-{definition.end_line}  {definition.symbol} ({definition.kind}, {definition.tier})"
            )
        if outcome.definitions is not None:
            if not outcome.definitions:
                self.stdout.write("no results")
            return
        result = outcome.hybrid
        assert result is not None
        if not options["quiet"]:
            for stage in result.trace:
                why = f" ({stage.reason})" if stage.reason else ""
                self.stderr.write(f"# {stage.name}: {stage.status}{why} {stage.ms:.0f} ms")
        if not result.hits:
            self.stdout.write("no results")
        for hit in result.hits:
            location = f"{hit.repo_name}:{hit.file_path}:{hit.start_line}-{hit.end_line}"
            self.stdout.write(f"{location}  {hit.symbol}".rstrip())
            lines = hit.content.splitlines()
            for line in lines[:SNIPPET_LINES]:
                self.stdout.write(f"    {line}")
            if len(lines) > SNIPPET_LINES:
                self.stdout.write(f"    ... ({len(lines) - SNIPPET_LINES} more lines)")
            self.stdout.write("")

    def _write_exact(self, outcome: SearchOutcome, *, quiet: bool) -> None:
        """Exact/regex: ``repo:path:line: text`` per matching line, as grep prints them."""
        result = outcome.exact
        assert result is not None
        if not result.hits:
            self.stdout.write("no results")
        for hit in result.hits:
            for match in hit.matches:
                self.stdout.write(
                    f"{hit.file.repo_name}:{hit.file.path}:{match.line}: {match.text}"
                )
        if not quiet:
            more = "+" if result.total_is_lower_bound else ""
            self.stderr.write(f"# {outcome.mode}: {result.total}{more} files, {result.ms:.0f} ms")
