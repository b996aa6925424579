"""Term postings for every branch's live generation, not only the default branch's: the primary
keys of ``TermPostings`` and ``TermBucket`` gain ``generation``.

Existing rows keep their keys (each repository has one generation's rows today). Another
branch's statistics are built by its next index run, or by ``manage.py doctor --repair``; until
then its searches rank on the capped fallback, as before.
"""

from django.db import migrations, models

FORWARD = [
    "ALTER TABLE search_termpostings DROP CONSTRAINT search_termpostings_pkey,"
    " ADD PRIMARY KEY (repository_id, generation, term, part)",
    "ALTER TABLE search_termbucket DROP CONSTRAINT search_termbucket_pkey,"
    " ADD PRIMARY KEY (repository_id, generation, bucket)",
]
# Back to one generation per repository: other branches' rows go first.
BACKWARD = [
    "DELETE FROM search_termpostings t USING indexing_repository r"
    " WHERE r.id = t.repository_id AND t.generation <> r.active_generation",
    "DELETE FROM search_termbucket t USING indexing_repository r"
    " WHERE r.id = t.repository_id AND t.generation <> r.active_generation",
    "DELETE FROM search_chunkfacetstat t USING indexing_repository r"
    " WHERE r.id = t.repository_id AND t.generation <> r.active_generation",
    "ALTER TABLE search_termpostings DROP CONSTRAINT search_termpostings_pkey,"
    " ADD PRIMARY KEY (repository_id, term, part)",
    "ALTER TABLE search_termbucket DROP CONSTRAINT search_termbucket_pkey,"
    " ADD PRIMARY KEY (repository_id, bucket)",
]


def composite(*fields: str) -> models.CompositePrimaryKey:
    return models.CompositePrimaryKey(
        *fields, blank=True, editable=False, primary_key=True, serialize=False
    )


class Migration(migrations.Migration):
    dependencies = [("search", "0006_postings_by_kind")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)],
            state_operations=[
                migrations.AlterField(
                    model_name="termpostings",
                    name="pk",
                    field=composite("repository", "generation", "term", "part"),
                ),
                migrations.AlterField(
                    model_name="termbucket",
                    name="pk",
                    field=composite("repository", "generation", "bucket"),
                ),
            ],
        ),
    ]
