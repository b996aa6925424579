"""``manage.py mcp``: the MCP server over stdio, for a coding agent to launch.

Every tool reads, except ``refresh_repository``, which queues a re-index and needs ``--user`` of
an account with the write role.

stdout carries the protocol, so nothing else may be printed there; logs go to stderr.
The same tools are served over streamable HTTP at ``/mcp`` by the web server.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = (
        "Serve the MCP tools on stdio: search_code, list_repositories, repository_status, "
        "get_file, find_symbol, find_references, list_files (read), and refresh_repository "
        "(queues a re-index; needs --user with the write role)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--transport",
            choices=["stdio"],
            default="stdio",
            help="stdio (the web server serves streamable HTTP at /mcp).",
        )
        parser.add_argument(
            "--user",
            default=None,
            help="Act as this account: the tools see the repositories it may see, and "
            "refresh_repository needs its write role. Without it, only repositories visible to "
            "every account, and refresh_repository is refused.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from django.contrib.auth import get_user_model
        from django.core.management.base import CommandError

        from accounts.roles import role_of
        from accounts.visibility import Viewer, viewer_for
        from search.mcp.identity import Caller, act_as
        from search.mcp.server import build_server

        viewer, caller = Viewer(), Caller()
        if options["user"] is not None:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None or role_of(user) is None:
                raise CommandError(f"no active account named {options['user']!r}")
            viewer, caller = viewer_for(user), Caller(role_of(user), user)
        act_as(viewer, caller)
        # Anything on stdout that is not a protocol message breaks the client.
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
        build_server().run("stdio")
