"""Term postings replace the per-term document frequencies (``TermStat``).

The lists are stored uncompressed (``EXTERNAL``) so that a search can read the head of a long
list without fetching and decompressing all of it. Statistics of indexed repositories are
rebuilt here, so no repository falls back to counting on the fly after the upgrade.
"""

import django.db.models.deletion
from django.db import migrations, models


def rebuild_statistics(apps, schema_editor):  # type: ignore[no-untyped-def]
    from search.retrieval.corpus_stats import refresh_search_stats

    Repository = apps.get_model("indexing", "Repository")
    for repository_id in Repository.objects.filter(active_generation__gt=0).values_list(
        "pk", flat=True
    ):
        refresh_search_stats(repository_id)


class Migration(migrations.Migration):

    dependencies = [
        ('indexing', '0010_repository_file'),
        ('search', '0003_symbol_name_trigram_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='TermPostings',
            fields=[
                ('pk', models.CompositePrimaryKey('repository', 'term', blank=True, editable=False, primary_key=True, serialize=False)),
                ('generation', models.PositiveIntegerField()),
                ('term', models.CharField(max_length=128)),
                ('df', models.PositiveIntegerField(help_text='Chunks of the generation containing the term.')),
                ('postings', models.BinaryField(help_text='Packed records, best impact first.')),
                ('repository', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='indexing.repository')),
            ],
        ),
        migrations.DeleteModel(
            name='TermStat',
        ),
        migrations.RunSQL(
            "ALTER TABLE search_termpostings ALTER COLUMN postings SET STORAGE EXTERNAL",
            migrations.RunSQL.noop,
        ),
        migrations.RunPython(rebuild_statistics, migrations.RunPython.noop),
    ]
