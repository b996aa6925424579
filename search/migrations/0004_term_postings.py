"""Term postings replace the per-term document frequencies (``TermStat``).

The lists are stored uncompressed (``EXTERNAL``) so that a search can read the head of a long
list without fetching and decompressing all of it. Nothing is rebuilt here (a migration calls no
product code; 0006 recreates the table anyway): the facet counts are dropped, so indexed
repositories count their statistics on the fly until their next index or ``manage.py doctor
--repair`` rebuilds them.
"""

import django.db.models.deletion
from django.db import migrations, models


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
        migrations.RunSQL("DELETE FROM search_chunkfacetstat", migrations.RunSQL.noop),
    ]
