"""Term postings in the 8-byte record format (``indexing.postings_format``).

Lists still in the 15-byte format of 0004 (``length = 15 * df``; a list of the new format is
``8 + 8 * df`` long) are dropped, with the facet counts of their repositories, so those
repositories count their statistics on the fly (exact, slower) until their next index rebuilds
both. Nothing is rebuilt here: a migration stays quick at any corpus size and calls no product
code.
"""

from django.db import migrations

OLD_FORMAT = "SELECT repository_id FROM search_termpostings WHERE length(postings) = 15 * df"


class Migration(migrations.Migration):

    dependencies = [
        ("search", "0004_term_postings"),
    ]

    operations = [
        migrations.RunSQL(
            [
                f"DELETE FROM search_chunkfacetstat WHERE repository_id IN ({OLD_FORMAT})",
                f"DELETE FROM search_termpostings WHERE repository_id IN ({OLD_FORMAT})",
            ],
            migrations.RunSQL.noop,
        ),
    ]
