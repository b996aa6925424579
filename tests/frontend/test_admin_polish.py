"""Admin: files and chunks are read-only records with filters, and link to the web UI's file view."""

from __future__ import annotations

import pytest
from django.test import Client

from indexing.models import Chunk, IndexJob, Repository, SourceFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def chunk() -> Chunk:
    repository = Repository.objects.create(url="https://example.org/a.git", name="acme/a")
    source = SourceFile.objects.create(
        repository=repository, generation=1, path="src/a.py", language="python", blob_sha="0" * 40
    )
    IndexJob.objects.create(repository=repository, state="failed", error="over the size limit")
    return Chunk.objects.create(
        repository=repository,
        file=source,
        generation=1,
        index=0,
        start_line=3,
        end_line=9,
        symbol="run",
        language="python",
        path="src/a.py",
        content="def run(): ...",
        content_hash="h",
    )


def test_files_chunks_and_jobs_cannot_be_deleted_from_the_admin(
    admin_client: Client, chunk: Chunk
) -> None:
    for url in (
        f"/admin/indexing/chunk/{chunk.pk}/delete/",
        f"/admin/indexing/sourcefile/{chunk.file_id}/delete/",
        f"/admin/indexing/indexjob/{IndexJob.objects.get().pk}/delete/",
    ):
        assert admin_client.get(url).status_code == 403, url


def test_filters_by_repository_and_a_link_to_the_file_view(
    admin_client: Client, chunk: Chunk
) -> None:
    listing = admin_client.get(
        f"/admin/indexing/chunk/?repository__id__exact={chunk.repository_id}"
    )
    assert listing.status_code == 200 and "src/a.py" in listing.content.decode()
    jobs = admin_client.get("/admin/indexing/indexjob/?q=size+limit")
    assert "over the size limit" in jobs.content.decode()
    page = admin_client.get(f"/admin/indexing/chunk/{chunk.pk}/change/").content.decode()
    assert f"/repos/{chunk.repository_id}/file?path=src%2Fa.py&amp;start=3&amp;end=9#L3" in page
