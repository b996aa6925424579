"""``manage.py doctor [--repair] [--json]``: drift between the database and the data directory."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from indexing.services.doctor import DEFAULT_JOB_GRACE, examine


class Command(BaseCommand):
    help = (
        "Find drift between the database and the data directory (clones without rows, what "
        "killed fetches left, rows without clones, generations left behind, vectors no chunk "
        "uses, missing full-text statistics, stuck statuses, jobs no worker runs); "
        "--repair fixes what it finds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true", help="fix what is found")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--job-grace-secs",
            type=int,
            default=int(DEFAULT_JOB_GRACE.total_seconds()),
            help="a running job counts as orphaned only after this long without a heartbeat",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = examine(
            repair=options["repair"], job_grace=timedelta(seconds=options["job_grace_secs"])
        )
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=1))
            return
        for note in report.notes:
            self.stdout.write(f"note: {note}")
        if not report.findings:
            self.stdout.write("no drift found")
            return
        for finding in report.findings:
            where = f" {finding.repository} ({finding.repository_id})" if finding.repository else ""
            done = f" -> repaired: {finding.action}" if finding.repaired else ""
            self.stdout.write(f"{finding.kind}{where}: {finding.detail}{done}")
        repaired = sum(f.repaired for f in report.findings)
        self.stdout.write(f"{len(report.findings)} found, {repaired} repaired")
        if not options["repair"]:
            self.stdout.write("run with --repair to fix them")
