"""Term postings split by kind of chunk and by block of 2^32 ids (``TermPostings.part``), and
the short lists packed many to a row (``TermBucket``).

The table is recreated empty (its primary key gains ``part``), and the facet counts are dropped
with it, so every repository counts its statistics on the fly (exact, slower) and ranks on the
capped path until its next index or the periodic drift check (``manage.py doctor --repair``)
rebuilds both. Nothing is rebuilt here: a migration stays quick at any corpus size and calls no
product code.
"""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0010_repository_file"),
        ("search", "0005_compact_postings"),
    ]

    operations = [
        migrations.DeleteModel(name="TermPostings"),
        migrations.CreateModel(
            name="TermPostings",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "repository",
                        "term",
                        "part",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("generation", models.PositiveIntegerField()),
                ("term", models.CharField(max_length=128)),
                (
                    "part",
                    models.PositiveIntegerField(
                        default=0,
                        help_text="Test/doc flags (& 3) and block of 2^32 chunk ids (>> 2).",
                    ),
                ),
                (
                    "df",
                    models.PositiveIntegerField(
                        help_text="Chunks of the part containing the term."
                    ),
                ),
                ("postings", models.BinaryField(help_text="Packed records, best impact first.")),
                (
                    "repository",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="indexing.repository",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name='TermBucket',
            fields=[
                ('pk', models.CompositePrimaryKey('repository', 'bucket', blank=True, editable=False, primary_key=True, serialize=False)),
                ('generation', models.PositiveIntegerField()),
                ('bucket', models.PositiveIntegerField(help_text='Hash of the lexemes (postings_format.BUCKET_SQL).')),
                ('terms', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=128), size=None)),
                ('parts', django.contrib.postgres.fields.ArrayField(base_field=models.PositiveIntegerField(), size=None)),
                ('dfs', django.contrib.postgres.fields.ArrayField(base_field=models.PositiveIntegerField(), size=None)),
                ('postings', django.contrib.postgres.fields.ArrayField(base_field=models.BinaryField(), size=None)),
                ('repository', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='indexing.repository')),
            ],
        ),
        migrations.RunSQL(
            [
                "ALTER TABLE search_termpostings ALTER COLUMN postings SET STORAGE EXTERNAL",
                # ~1 kB rows of short lists: kept inline and uncompressed
                "ALTER TABLE search_termbucket ALTER COLUMN postings SET STORAGE MAIN",
                "DELETE FROM search_chunkfacetstat",
            ],
            migrations.RunSQL.noop,
        ),
    ]
