"""Exact and regex search: ``pg_trgm`` and a GIN trigram index on the chunks' text.

``search.exact.candidates`` narrows ``LIKE``/``ILIKE`` substring searches with it. The index is
built without ``CONCURRENTLY`` (migrations run in a transaction); on a large existing index it
takes a while once (see the README's figures for its size against the text's).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0007_indexjob_resumes"),
        ("search", "0001_corpus_stats"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                "CREATE EXTENSION IF NOT EXISTS pg_trgm",
                "CREATE INDEX IF NOT EXISTS chunk_content_trgm"
                " ON indexing_chunk USING gin (content gin_trgm_ops)",
            ],
            reverse_sql=["DROP INDEX IF EXISTS chunk_content_trgm"],
        ),
    ]
