"""Which ``Repository`` rows a ``Viewer`` may see, in SQL (who the viewer is: ``accounts``).

A repository with no visibility groups is visible to every account; otherwise only to members of
one of its groups (and to administrators). Every read path narrows ``Repository`` rows with
``visible_repositories(viewer)`` (or another model's rows with ``repository_filter``) before
anything else, so a repository a viewer cannot see answers exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from accounts.visibility import Viewer
from indexing.models import Repository


def repository_filter(viewer: Viewer, prefix: str = "") -> Q:
    """A ``Q`` on a model whose ``prefix`` leads to ``Repository`` ("" for Repository itself)."""
    if viewer.sees_everything:
        return Q()
    restricted = Repository.visible_to_groups.through.objects.values("repository_id")
    visible_restricted = restricted.filter(group_id__in=list(viewer.group_ids))
    key = f"{prefix}pk"
    return ~Q(**{f"{key}__in": restricted}) | Q(**{f"{key}__in": visible_restricted})


def visible_repositories(viewer: Viewer, queryset: QuerySet[Any] | None = None) -> QuerySet[Any]:
    """``Repository`` rows (or ``queryset`` of them) that ``viewer`` may see."""
    rows = Repository.objects.all() if queryset is None else queryset
    return rows.filter(repository_filter(viewer))
