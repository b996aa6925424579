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


def _index(name: str) -> tuple[int, str, bool] | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indexrelid::int, pg_get_indexdef(i.indexrelid), i.indisvalid"
            " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [name],
        )
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), str(row[1]), bool(row[2]))


@pytest.mark.django_db(transaction=True)
def test_the_migration_rebuilds_an_m16_index_with_m32_and_searches_still_find_the_nearest() -> None:
    import importlib

    import numpy as np
    from django.apps import apps

    from indexing.models import EmbeddingVector

    migration = importlib.import_module("indexing.migrations.0016_hnsw_m32")
    old = EmbeddingSpace.objects.create(key="test/m16/8", provider="test", model="m16", dim=8)
    done = EmbeddingSpace.objects.create(key="test/m32/8", provider="test", model="m32", dim=8)
    bare = EmbeddingSpace.objects.create(key="test/none/8", provider="test", model="none", dim=8)
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(300, 8)).astype(np.float32)
    EmbeddingVector.objects.bulk_create(
        EmbeddingVector(space=old, text_hash=f"h{i}", vector=row.tolist())
        for i, row in enumerate(rows)
    )
    with connection.cursor() as cursor:
        cursor.execute(vectors.hnsw_index_sql(old, m=16))
        cursor.execute(vectors.hnsw_index_sql(done, m=32))
        # a build cut short before: an index under the new name, which must not survive
        cursor.execute(
            vectors.hnsw_index_sql(old, m=8).replace(old.index_name, f"{old.index_name}_m32", 1)
        )
    untouched = _index(done.index_name)
    with connection.schema_editor(atomic=False) as editor:
        migration.rebuild_hnsw_indexes(apps, editor)
    rebuilt = _index(old.index_name)
    assert rebuilt is not None and "m='32'" in rebuilt[1] and rebuilt[2]  # valid, same name
    assert f"space_id = {old.pk}" in rebuilt[1]
    assert _index(f"{old.index_name}_m32") is None
    assert _index(done.index_name) == untouched  # already m 32: not rebuilt
    assert _index(bare.index_name) is None  # none before: made on first use
    vectors._ensure_hnsw_index(bare)  # ... with the same m, so a later run leaves it alone
    made = _index(bare.index_name)
    assert made is not None and f"m='{migration.M}'" in made[1]
    with connection.schema_editor(atomic=False) as editor:
        migration.rebuild_hnsw_indexes(apps, editor)
    assert _index(bare.index_name) == made and _index(old.index_name) == rebuilt
    query = rows[17] + 0.01
    literal = "[" + ",".join(str(float(x)) for x in query) + "]"
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute(
            "SELECT text_hash FROM indexing_embeddingvector WHERE space_id = %s"
            " ORDER BY vector::vector(8) <=> %s::vector(8) LIMIT 1",
            [old.pk, literal],
        )
        assert cursor.fetchone()[0] == "h17"
        cursor.execute("SET enable_seqscan = on")
