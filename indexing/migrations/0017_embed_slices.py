from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0016_hnsw_m32"),
    ]

    operations = [
        migrations.AddField(
            model_name="indexjob",
            name="chunks_reused",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Of chunks_embedded: pointed at a vector computed before (no model).",
            ),
        ),
        migrations.AddField(
            model_name="indexjob",
            name="slice_started_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the running slice of embedding began; empty between slices (estimates).",
                null=True,
            ),
        ),
    ]
