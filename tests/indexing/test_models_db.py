"""The schema on real PostgreSQL: pgvector is installed, line ranges are checked."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection

from indexing.models import Chunk, Repository, SourceFile


@pytest.mark.django_db
def test_pgvector_extension_is_installed() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        version = cursor.fetchone()[0]
    major, minor = (int(part) for part in version.split(".")[:2])
    assert (major, minor) >= (0, 7)


@pytest.mark.django_db
def test_the_same_url_and_branch_cannot_be_added_twice() -> None:
    Repository.objects.create(url="https://example.com/a.git", branch="", name="a")
    with pytest.raises(IntegrityError):
        Repository.objects.create(url="https://example.com/a.git", branch="", name="a2")


@pytest.mark.django_db
def test_a_chunk_with_an_inverted_line_range_is_refused() -> None:
    repository = Repository.objects.create(url="https://example.com/b.git", name="b")
    source = SourceFile.objects.create(
        repository=repository, generation=1, path="a.py", blob_sha="0" * 40
    )
    with pytest.raises(IntegrityError):
        Chunk.objects.create(
            repository=repository,
            file=source,
            generation=1,
            index=0,
            start_line=10,
            end_line=3,
            path="a.py",
            content="x",
            content_hash="h",
        )
