"""The admin's job pages, read from a real index run: names instead of ids, stage timings as a
table, and the skipped files listed with the reason the walk gave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from indexing.models import IndexJob
from tests.accounts_support import token_client
from tests.indexing.real_run import fetch_and_index, mirror

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(settings: Any, tmp_path: Path) -> IndexJob:
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    return fetch_and_index(mirror(tmp_path))


def test_the_walk_records_which_files_it_skipped_and_why(job: IndexJob) -> None:
    reasons = {item["path"]: item["reason"] for item in job.skipped_files}
    assert reasons["node_modules/"] == "vendored directory"
    assert reasons["generated/"] == "ignored by .gitignore"  # a directory: listed once
    assert reasons["image.png"] == "binary"
    assert reasons["big.txt"] == "too large"
    assert reasons["link_passwd"] == "symlink"
    assert reasons[".gitignore"] == "hidden file"
    assert job.files_skipped == len(job.skipped_files)
    body = token_client().get(f"/api/jobs/{job.pk}").json()
    assert {"path": "image.png", "reason": "binary"} in body["skipped_files"]


def test_job_pages_name_the_repository_and_draw_timings_and_skips_as_tables(
    admin_client: Client, job: IndexJob
) -> None:
    listing = admin_client.get("/admin/indexing/indexjob/").content.decode()
    assert f"acme/demo #{job.pk}</a>" in listing
    assert str(job.repository_id) not in listing  # no UUIDs where a name will do

    page = admin_client.get(f"/admin/indexing/indexjob/{job.pk}/change/").content.decode()
    assert f"acme/demo: full job #{job.pk} (Storing)" in page  # the title
    assert 'name="_save"' not in page  # a record of the worker's, to read
    assert "<th>stage</th><th>seconds</th>" in page
    for stage in ("cloning", "walking", "chunking", "storing"):
        seconds = f"{job.stage_timings[stage]:.2f}"
        assert f"<tr><td>{stage}</td><td>{seconds}</td></tr>" in page
    assert '"cloning":' not in page  # not the raw JSON
    assert "<th>path</th><th>reason</th>" in page
    assert "<tr><td>image.png</td><td>binary</td></tr>" in page
    assert "<tr><td>generated/</td><td>ignored by .gitignore</td></tr>" in page


def test_an_old_job_without_the_list_says_so(admin_client: Client, job: IndexJob) -> None:
    IndexJob.objects.filter(pk=job.pk).update(skipped_files=[])
    page = admin_client.get(f"/admin/indexing/indexjob/{job.pk}/change/").content.decode()
    assert "not recorded" in page


def test_the_repository_page_lists_its_jobs_by_name(admin_client: Client, job: IndexJob) -> None:
    page = admin_client.get(
        f"/admin/indexing/repository/{job.repository_id}/change/"
    ).content.decode()
    assert f"acme/demo: full job #{job.pk}" in page
