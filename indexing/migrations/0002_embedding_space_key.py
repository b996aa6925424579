"""Embedding spaces are keyed by the model layer's space key (provider/model/dim[/strategy])."""

from django.db import migrations, models


def fill_keys(apps, schema_editor):
    EmbeddingSpace = apps.get_model("indexing", "EmbeddingSpace")
    for space in EmbeddingSpace.objects.all():
        space.key = f"{space.provider}/{space.model}/{space.dim}"
        space.save(update_fields=["key"])


class Migration(migrations.Migration):
    dependencies = [("indexing", "0001_initial")]

    operations = [
        migrations.RemoveConstraint(model_name="embeddingspace", name="unique_embedding_space"),
        migrations.AddField(
            model_name="embeddingspace",
            name="key",
            field=models.CharField(max_length=300, null=True),
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="embeddingspace",
            name="key",
            field=models.CharField(
                help_text="The model layer's space key, e.g. local/all-MiniLM-L6-v2/384[/windows].",
                max_length=300,
                unique=True,
            ),
        ),
    ]
