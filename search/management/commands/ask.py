"""``manage.py ask "question" [--repo ID|NAME] [--k N] [--expand] [--hyde] [--json]``.

Prints the answer with ``[n]`` markers, then the sources as ``n. repo:path:start-end  symbol``
with their permalinks. With no chat model reachable it prints where to look (the retrieved
sources) and exits with status 3; ``--json`` prints the API's document either way.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reposearch.domain_errors import DomainError
from search import contract
from search.ask.errors import AskFailed
from search.ask.serializers import MAX_DEPTH, MAX_K, MAX_QUESTION_CHARS
from search.ask.service import AskRequest, answer_question
from search.management.viewer_option import add_user_option, viewer_from_options


class Command(BaseCommand):
    help = (
        "Answer a question about the indexed code, with citations to exact lines. Sees every"
        " repository, restricted ones too, unless --user NAME is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument(
            "--repo", action="append", default=[], help="Repository id or name (repeat)."
        )
        parser.add_argument("--k", type=int, default=8, help=f"Snippets retrieved (1..{MAX_K}).")
        parser.add_argument("--expand", action="store_true", help="Follow the call graph.")
        parser.add_argument("--depth", type=int, default=2, help="Call-graph depth (1..4).")
        parser.add_argument(
            "--hyde", action="store_true", help="Search a hypothetical snippet too."
        )
        parser.add_argument("--tests", choices=["auto", "yes", "no"], default="auto")
        parser.add_argument("--docs", choices=["auto", "yes", "no"], default="auto")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON document.")
        add_user_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        question = options["question"].strip()
        if not question:
            raise CommandError("the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise CommandError(f"the question is over {MAX_QUESTION_CHARS} characters")
        if not 1 <= options["k"] <= MAX_K:
            raise CommandError(f"--k must be between 1 and {MAX_K}")
        if not 1 <= options["depth"] <= MAX_DEPTH:
            raise CommandError(f"--depth must be between 1 and {MAX_DEPTH}")
        viewer = viewer_from_options(options)
        try:  # ids or names, as POST /api/ask's repo_ids
            repo_ids = contract.repository_ids(options["repo"], viewer)
        except DomainError as exc:
            raise CommandError(f"--repo: {exc}") from None
        tristate = {"auto": None, "yes": True, "no": False}
        request = AskRequest(
            question=question,
            repo_ids=repo_ids or None,
            k=options["k"],
            expand=options["expand"],
            expand_depth=options["depth"],
            hyde=options["hyde"],
            include_tests=tristate[options["tests"]],
            include_docs=tristate[options["docs"]],
            viewer=viewer,
        )
        try:
            result = answer_question(request)
        except AskFailed as exc:
            if options["json"]:
                body = {"error": {"code": exc.code, "message": exc.message}}
                self.stdout.write(json.dumps({**body, "sources": exc.result.retrieved}, indent=2))
            else:
                self.stderr.write(f"{exc.message}\nWhere to look:")
                for source in exc.result.retrieved:
                    self.stdout.write(f"  {source['location']}  {source['symbol']}")
            sys.exit(3)
        except DomainError as exc:  # an unknown repository, a refused question...
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
            return
        answer = result.answer or {}
        self.stdout.write(answer.get("text", ""))
        if result.sources:
            self.stdout.write("\nSources:")
        for source in result.sources:
            self.stdout.write(f"  [{source['number']}] {source['location']}  {source['symbol']}")
            self.stdout.write(f"      {source['permalink']}")
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
