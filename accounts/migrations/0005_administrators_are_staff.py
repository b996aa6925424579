"""Administrators open Django's admin: accounts given the admin role before ``grant_role`` kept
``is_staff`` in step (``accounts.roles.keep_staff_in_step``) get it now, as do superusers.

Nobody loses it here: another staff account may have been given it on purpose. The reverse
changes nothing. The group's name is written out, not imported, so this migration keeps
meaning what it meant if ``accounts.roles`` changes later.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Q

ADMIN_GROUP = "reposearch-admin"


def administrators_are_staff(apps: Any, schema_editor: Any) -> None:
    users = apps.get_model("auth", "User").objects.using(schema_editor.connection.alias)
    users.filter(Q(is_superuser=True) | Q(groups__name=ADMIN_GROUP), is_staff=False).update(
        is_staff=True
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_token_parent")]
    operations = [migrations.RunPython(administrators_are_staff, migrations.RunPython.noop)]
