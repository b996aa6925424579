"""SwapPosition: the WAL position of a repository's last generation swap, which a read replica
must have replayed before a search of the repository is served there. Repositories indexed
before it are given the primary's position now: everything they show committed before it."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("indexing", "0018_repository_source"),
    ]

    operations = [
        migrations.CreateModel(
            name="SwapPosition",
            fields=[
                (
                    "repository",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="swap_position",
                        serialize=False,
                        to="indexing.repository",
                    ),
                ),
                ("lsn", models.BigIntegerField(null=True)),
            ],
        ),
        migrations.RunSQL(
            "INSERT INTO indexing_swapposition (repository_id, lsn)"
            " SELECT id, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
            " FROM indexing_repository",
            migrations.RunSQL.noop,
        ),
    ]
