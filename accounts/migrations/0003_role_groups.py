"""The role groups exist from the start: granting a colleague a role needs no group made by hand.

Idempotent (a group made by hand earlier is kept, with its members). The reverse leaves the
groups in place: they may hold members, and a repository restricted to one of them would become
visible to everyone if it were deleted. The names are written out here, not imported, so this
migration keeps meaning what it meant if ``accounts.roles`` changes later.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

ROLE_GROUP_NAMES = ("reposearch-write", "reposearch-admin")


def create_role_groups(apps: Any, schema_editor: Any) -> None:
    group_model = apps.get_model("auth", "Group")
    for name in ROLE_GROUP_NAMES:
        group_model.objects.using(schema_editor.connection.alias).get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_audit_append_only"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(create_role_groups, migrations.RunPython.noop)]
