"""One vector per distinct embedded text: ``EmbeddingVector``, and a nullable pointer to it from
``ChunkEmbedding`` (filled by 0012, made required by 0013)."""

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0010_repository_file"),
    ]

    operations = [
        migrations.CreateModel(
            name="EmbeddingVector",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("text_hash", models.CharField(max_length=64)),
                ("vector", pgvector.django.vector.VectorField()),
                (
                    "space",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="vectors",
                        to="indexing.embeddingspace",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("space", "text_hash"), name="unique_space_text_hash"
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="chunkembedding",
            name="embedding_vector",
            field=models.ForeignKey(
                null=True,
                db_index=False,  # built after the fill (0013): cheaper than row by row
                on_delete=django.db.models.deletion.CASCADE,
                related_name="chunk_embeddings",
                to="indexing.embeddingvector",
            ),
        ),
    ]
