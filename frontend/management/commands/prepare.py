"""``manage.py prepare``: bring the database and the site to what this version needs, in one
process -- the migrations, the static files, the first administrator (on an empty database)
and the repository file of the settings (``REPO_SEARCH_REPOS_FILE``).

``make up`` and compose's ``migrate`` service run it before the web server and the workers
start. Each step is the command of its own name (``migrate``, ``collectstatic``,
``initial_admin``, ``sync_repos --from-settings``), run as that command runs: one process saves
the three extra start-ups of Django (about 3 s of CPU each on two cores). The repository file is
the one step that never stops the start: without ``REPO_SEARCH_REPOS_FILE`` it is skipped, and a
file ``sync_repos`` refuses (unreadable, invalid) is reported on stderr while the site starts
with the repositories it has.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from reposearch.data_folder import private_folder


class Command(BaseCommand):
    help = (
        "Apply the migrations, collect the static files, create the first administrator and"
        " apply REPO_SEARCH_REPOS_FILE: what make up and compose run before the site starts."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # The streams this command was given (not its wrappers: a second wrapper would end
        # every write with a newline, migrate's "Applying x..." before its " OK" included).
        out = {"stdout": options.get("stdout") or sys.stdout}
        out["stderr"] = options.get("stderr") or sys.stderr
        call_command("migrate", interactive=False, verbosity=options["verbosity"], **out)
        static = settings.STATIC_ROOT
        if static and Path(static).is_relative_to(settings.REPO_SEARCH_DATA_DIR):
            private_folder(static)  # as the data directory's other folders: private from the start
        call_command("collectstatic", interactive=False, verbosity=0, **out)
        call_command("initial_admin", **out)
        if settings.REPO_SEARCH_REPOS_FILE:
            try:
                call_command("sync_repos", from_settings=True, **out)
            except CommandError as refusal:  # the beat check applies the file once it is fixed
                out["stderr"].write(f"reposearch: {refusal}\n")
