"""Symbol search: a GIN trigram index on the definitions' names.

``search.symbols.lookup`` finds names by substring (``ILIKE``) and by trigram similarity (the
``%`` operator of ``pg_trgm``); both are answered from this index rather than a scan.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0009_repository_visibility"),
        ("search", "0002_exact_search_trigram_index"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                "CREATE EXTENSION IF NOT EXISTS pg_trgm",
                "CREATE INDEX IF NOT EXISTS chunk_symbol_name_trgm"
                " ON indexing_chunk USING gin (symbol_name gin_trgm_ops)",
            ],
            reverse_sql=["DROP INDEX IF EXISTS chunk_symbol_name_trgm"],
        ),
    ]
