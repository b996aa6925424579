"""``ChunkEmbedding`` keeps only the pointer to its vector; each space's HNSW index is built
on ``indexing_embeddingvector`` (distinct vectors)."""

import django.db.models.deletion
from django.db import migrations, models


def build_hnsw_indexes(apps, schema_editor):  # type: ignore[no-untyped-def]
    EmbeddingSpace = apps.get_model("indexing", "EmbeddingSpace")
    with schema_editor.connection.cursor() as cursor:
        for space in EmbeddingSpace.objects.all():
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS embvec_hnsw_space_{int(space.pk)}"
                " ON indexing_embeddingvector"
                f" USING hnsw ((vector::vector({int(space.dim)})) vector_cosine_ops)"
                f" WITH (m = 16, ef_construction = 200) WHERE space_id = {int(space.pk)}"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0012_fill_embeddingvector"),
    ]

    operations = [
        # Rows written by an older process during the fill, if any: their chunks are embedded
        # again by the next run.
        migrations.RunSQL(
            "DELETE FROM indexing_chunkembedding WHERE embedding_vector_id IS NULL",
            migrations.RunSQL.noop,
        ),
        migrations.RemoveIndex(model_name="chunkembedding", name="chunkemb_space_hash"),
        migrations.RemoveField(model_name="chunkembedding", name="content_hash"),
        migrations.RemoveField(model_name="chunkembedding", name="vector"),
        migrations.AlterField(
            model_name="chunkembedding",
            name="embedding_vector",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="chunk_embeddings",
                to="indexing.embeddingvector",
            ),
        ),
        migrations.RunPython(build_hnsw_indexes, migrations.RunPython.noop),
    ]
