"""Rebuild every stored chunk's tsvector with the English stems fields (see ``storing``).

Queries look words up by their stems, so rows stored before this migration would miss the
inflected matches until rebuilt; this rewrites them in place (no re-chunking, no re-embedding;
about 2,000 chunks/s here) and refreshes the BM25 statistics. Reversing it is a no-op: the
rebuilt rows keep every exact token they had.
"""

from __future__ import annotations

from django.db import migrations


def rebuild(apps, schema_editor):  # type: ignore[no-untyped-def]
    from indexing.services.storing import rebuild_search_vectors
    from search.stats import refresh_all_search_stats

    if rebuild_search_vectors():
        refresh_all_search_stats()


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0005_contextual_summaries"),
        ("search", "0001_corpus_stats"),
    ]

    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop, elidable=True)]
