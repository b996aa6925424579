"""Who may see a repository: setting its visibility groups by name (the API's and admin's way).

``visibility_groups`` are names of existing Django groups; an empty list makes the repository
visible to every account again. Reading is ``accounts.visibility``'s business.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import Group

from indexing.exceptions import InvalidRepositoryInput
from indexing.models import Repository

MAX_VISIBILITY_GROUPS = 50


def groups_named(names: Sequence[str]) -> list[Group]:
    """The groups called ``names`` (each once). Raises ``InvalidRepositoryInput`` naming the
    ones that do not exist."""
    wanted = list(dict.fromkeys(str(name).strip() for name in names))
    if len(wanted) > MAX_VISIBILITY_GROUPS:
        raise InvalidRepositoryInput(
            "invalid_visibility",
            f"at most {MAX_VISIBILITY_GROUPS} visibility groups",
            {"field": "visibility_groups"},
        )
    groups = list(Group.objects.filter(name__in=wanted).order_by("name"))
    unknown = sorted(set(wanted) - {group.name for group in groups})
    if unknown:
        raise InvalidRepositoryInput(
            "unknown_group",
            "no group named "
            + ", ".join(repr(name) for name in unknown)
            + " (visibility_groups takes names of existing groups; [] = every account)",
            {"field": "visibility_groups", "unknown": unknown},
        )
    return groups


def set_visibility_groups(repository: Repository, names: Sequence[str]) -> None:
    """Restrict ``repository`` to members of the groups ``names`` ([]: visible to everyone)."""
    repository.visible_to_groups.set(groups_named(names))


def visibility_group_names(repository: Repository) -> list[str]:
    """The names of the groups ``repository`` is restricted to (prefetched when listed)."""
    return sorted(group.name for group in repository.visible_to_groups.all())
