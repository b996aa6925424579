"""Move existing vectors into ``EmbeddingVector``, one per (space, hash of the embedded text).

Safe on a big table: not one transaction but batches of ``BATCH`` chunk embeddings, each
committed on its own, and resumable (a batch only touches rows not pointed yet). The old
per-space HNSW indexes on ``indexing_chunkembedding`` are dropped first: every updated row
would otherwise get a new entry in them. The hash is computed in SQL exactly as
``indexing.services.vectors.embedded_text_hash`` computes it in Python (header + content).
"""

from django.db import migrations

BATCH = 50_000

TEXT_HASH = """encode(sha256(convert_to(
    'path: ' || c.path || E'\\n'
    || CASE WHEN c.symbol <> '' THEN coalesce(nullif(c.kind, ''), 'symbol') || ': ' || c.symbol
            || E'\\n' ELSE '' END
    || CASE WHEN c.summary <> '' THEN 'summary: ' || c.summary || E'\\n' ELSE '' END
    || c.content, 'UTF8')), 'hex')"""

SOURCE = f"""
    SELECT e.id, e.space_id, e.vector, {TEXT_HASH} AS text_hash
    FROM indexing_chunkembedding e JOIN indexing_chunk c ON c.id = e.chunk_id
    WHERE e.id >= %(low)s AND e.id < %(high)s AND e.embedding_vector_id IS NULL
"""


def fill(apps, schema_editor):  # type: ignore[no-untyped-def]
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'indexing_chunkembedding'"
            " AND indexdef LIKE '%%USING hnsw%%'"
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        cursor.execute("SELECT min(id), max(id) FROM indexing_chunkembedding")
        low, high = cursor.fetchone()
    if low is None:
        return
    for start in range(low, high + 1, BATCH):
        bounds = {"low": start, "high": start + BATCH}
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(
                "INSERT INTO indexing_embeddingvector (space_id, text_hash, vector)"
                f" SELECT DISTINCT ON (space_id, text_hash) space_id, text_hash, vector"
                f" FROM ({SOURCE}) src ORDER BY space_id, text_hash, id"
                " ON CONFLICT (space_id, text_hash) DO NOTHING",
                bounds,
            )
            cursor.execute(
                "UPDATE indexing_chunkembedding e SET embedding_vector_id = v.id"
                f" FROM ({SOURCE}) src JOIN indexing_embeddingvector v"
                " ON v.space_id = src.space_id AND v.text_hash = src.text_hash"
                " WHERE e.id = src.id",
                bounds,
            )
            cursor.execute("COMMIT")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("indexing", "0011_embeddingvector"),
    ]

    operations = [
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]
