"""The first embeds of a new embedding space, run at the same moment by two workers (two
repositories added together), both end with the space's vector index and neither fails."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from indexing.models import EmbeddingSpace
from indexing.services import vectors


@pytest.mark.django_db(transaction=True)
def test_two_first_embeds_of_a_space_at_once_both_get_its_index() -> None:
    errors: list[BaseException] = []
    for attempt in range(4):
        space = EmbeddingSpace.objects.create(
            key=f"test/race-{attempt}/8", provider="test", model=f"race-{attempt}", dim=8
        )
        start = threading.Barrier(2)

        def first_embed(space: EmbeddingSpace = space, start: threading.Barrier = start) -> None:
            try:
                start.wait(10)
                vectors._ensure_hnsw_index(space)
            except BaseException as error:
                errors.append(error)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=first_embed) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname = %s", [space.index_name]
            )
            assert cursor.fetchone()[0] == 1
    assert errors == []
