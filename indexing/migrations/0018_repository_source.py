"""Repository.source: the identity of a repository's source whatever the spelling of its URL
(``indexing.source_identity``), filled in for the repositories there are. Two that already share
one stay as they are (an administrator may delete either); only new adds are checked."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from indexing.source_identity import source_identity


def fill_sources(apps: Any, schema_editor: Any) -> None:
    repository_model = apps.get_model("indexing", "Repository")
    rows = repository_model.objects.using(schema_editor.connection.alias).only("pk", "url")
    for repository in rows.iterator():
        repository_model.objects.using(schema_editor.connection.alias).filter(
            pk=repository.pk
        ).update(source=source_identity(repository.url))


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0017_embed_slices"),
    ]

    operations = [
        migrations.AddField(
            model_name="repository",
            name="source",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=2048),
        ),
        migrations.RunPython(fill_sources, migrations.RunPython.noop),
    ]
