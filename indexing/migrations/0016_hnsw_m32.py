"""Each space's HNSW index is rebuilt with ``m = 32`` (was 16): on the 1 M-chunk corpus of forks
(near-copies of one code base with real vectors) recall@10 at ef_search 200 went from ~0.92 to
~0.96 (``docs/evaluation.md``, *Vector recall with real vectors for every base chunk*).

Built ``CONCURRENTLY`` under a new name beside the old index, so searches keep theirs while it
builds (minutes at a million vectors); then the old one is dropped and the new one takes its
name in one short transaction. A build cut short leaves an invalid index under the new name,
which the next run drops first. Spaces without an index get one on first use, from
``indexing.services.vectors.hnsw_index_sql``."""

from django.db import migrations

M, EF_CONSTRUCTION = 32, 200


def rebuild_hnsw_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    EmbeddingSpace = apps.get_model("indexing", "EmbeddingSpace")
    connection = schema_editor.connection
    for space in EmbeddingSpace.objects.all():
        name, pk, dim = f"embvec_hnsw_space_{int(space.pk)}", int(space.pk), int(space.dim)
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
            row = cursor.fetchone()
            if row is None or f"m='{M}'" in row[0]:
                continue
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}_m{M}")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY {name}_m{M} ON indexing_embeddingvector"
                f" USING hnsw ((vector::vector({dim})) vector_cosine_ops)"
                f" WITH (m = {M}, ef_construction = {EF_CONSTRUCTION}) WHERE space_id = {pk}"
            )
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"DROP INDEX {name}")
            cursor.execute(f"ALTER INDEX {name}_m{M} RENAME TO {name}")
            cursor.execute("COMMIT")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("indexing", "0015_chunk_repo_content_trgm"),
    ]

    operations = [
        migrations.RunPython(rebuild_hnsw_indexes, migrations.RunPython.noop),
    ]
