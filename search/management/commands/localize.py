"""``manage.py localize [FILE | -] [--repo NAME] [--limit N] [--json]``: locate an issue.

Reads the issue (or stack trace) from FILE, or from stdin with ``-`` or no argument, and prints
the files most likely to need a change, best first, each with its reasons and the functions that
made it rank (``search.localize``); ``--json`` prints the document ``POST /api/localize``
answers. An operator tool: it sees every repository, restricted ones too, unless ``--user NAME``
says whose view to take.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reposearch.domain_errors import DomainError
from search import contract
from search.localize.response import localize_document
from search.localize.serializers import MAX_FILES, serialize_localize
from search.localize.service import MAX_ISSUE_CHARS, LocalizeRequest, localize
from search.management.viewer_option import add_user_option, viewer_from_options


class Command(BaseCommand):
    help = (
        "Rank the files an issue or stack trace most likely needs changed (read from FILE or"
        " stdin). Sees every repository, restricted ones too, unless --user NAME is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", help="The issue's text; - for stdin.")
        parser.add_argument(
            "--repo", action="append", default=[], help="Repository id or name (repeat)."
        )
        parser.add_argument("--branch", help="An indexed branch (default: each default).")
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--tests", action="store_true", help="Rank test files too.")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON document.")
        add_user_option(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            issue = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {source}: {exc}") from None
        if not issue.strip():
            raise CommandError("the issue is empty")
        if len(issue) > MAX_ISSUE_CHARS:
            raise CommandError(f"the issue is over {MAX_ISSUE_CHARS} characters")
        if not 1 <= options["limit"] <= MAX_FILES:
            raise CommandError(f"--limit must be between 1 and {MAX_FILES}")
        viewer = viewer_from_options(options)
        try:
            repo_ids = contract.repository_ids(options["repo"], viewer)
        except DomainError as exc:
            raise CommandError(f"--repo: {exc}") from None
        try:
            result = localize(
                LocalizeRequest(
                    issue=issue,
                    viewer=viewer,
                    repo_ids=repo_ids,
                    branches=[options["branch"]] if options["branch"] else None,
                    limit=options["limit"],
                    include_tests=options["tests"],
                )
            )
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            document = serialize_localize(localize_document(result, viewer))
            self.stdout.write(json.dumps(document, indent=2))
            return
        if not result.files:
            self.stdout.write("no files")
        for rank, file in enumerate(result.files, start=1):
            self.stdout.write(f"{rank}. {file.repo_name}:{file.path}  ({file.score:.2f})")
            for reason in file.reasons:
                self.stdout.write(f"     - {reason}")
            for fn in file.functions:
                why = "; ".join(fn.reasons)
                self.stdout.write(f"     {fn.symbol} {fn.start_line}-{fn.end_line}: {why}")
