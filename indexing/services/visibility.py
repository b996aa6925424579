"""Who may see a repository: setting its visibility groups by name (the API's and admin's way).

``visibility_groups`` are names of existing Django groups; an empty list makes the repository
visible to every account again. Reading is ``accounts.visibility``'s business.

Changing an existing repository's groups is an administrator's decision (``change_visibility``):
a writer can neither open a restricted repository to everyone nor hide a public one, and every
change is audited as ``repository.visibility`` with the groups before and after. Whoever adds a
repository may choose its groups then (nothing that existed is opened or hidden); operators
(the repository file, ``import_repos``) act as administrators.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import Group
from django.db import transaction

from accounts.actors import Actor
from accounts.roles import Role
from indexing.exceptions import InvalidRepositoryInput, VisibilityChangeRefused
from indexing.models import Repository

MAX_VISIBILITY_GROUPS = 50


def groups_named(names: Sequence[str], among: frozenset[int] | None = None) -> list[Group]:
    """The groups called ``names`` (each once). Raises ``InvalidRepositoryInput`` naming the
    ones that do not exist -- or, with ``among`` (a writer's own groups), that are not among
    them: a writer may restrict what they add only to groups they are in, and learns nothing
    of the others, existing or not."""
    wanted = list(dict.fromkeys(str(name).strip() for name in names))
    if len(wanted) > MAX_VISIBILITY_GROUPS:
        raise InvalidRepositoryInput(
            "invalid_visibility",
            f"at most {MAX_VISIBILITY_GROUPS} visibility groups",
            {"field": "visibility_groups"},
        )
    found = Group.objects.filter(name__in=wanted).order_by("name")
    groups = list(found if among is None else found.filter(pk__in=among))
    unknown = sorted(set(wanted) - {group.name for group in groups})
    if unknown:
        takes = "existing groups" if among is None else "groups you are a member of"
        raise InvalidRepositoryInput(
            "unknown_group",
            "no group named "
            + ", ".join(repr(name) for name in unknown)
            + f" (visibility_groups takes names of {takes}; [] = every account)",
            {"field": "visibility_groups", "unknown": unknown},
        )
    return groups


def visibility_group_names(repository: Repository) -> list[str]:
    """The names of the groups ``repository`` is restricted to (prefetched when listed)."""
    return sorted(group.name for group in repository.visible_to_groups.all())


def ensure_may_change_visibility(actor: Actor) -> None:
    """Refuse (``VisibilityChangeRefused``) unless ``actor`` is an administrator."""
    role = actor.role
    if role is None or role < Role.ADMIN:
        raise VisibilityChangeRefused(
            "visibility_admin_only",
            "only administrators change who may see a repository "
            f"(you act as {role.label if role else 'nobody'}); ask one to set its "
            "visibility_groups",
            {"field": "visibility_groups"},
        )


def check_visibility_change(actor: Actor, repository: Repository, names: Sequence[str]) -> bool:
    """Whether setting the groups ``names`` would change ``repository``'s visibility; refuses
    (unknown groups, or a change by someone who is not an administrator) before anything is
    written, so a caller can check first and change other fields after."""
    wanted = sorted({str(name).strip() for name in names})
    before = sorted(repository.visible_to_groups.values_list("name", flat=True))  # not a prefetch
    if wanted == before:
        return False
    # Refused before the names are looked up: a writer learns nothing of which groups exist.
    ensure_may_change_visibility(actor)
    groups_named(names)
    return True


@transaction.atomic
def change_visibility(actor: Actor, repository: Repository, names: Sequence[str]) -> bool:
    """Restrict ``repository`` to the groups ``names`` ([]: every account) if ``actor`` is an
    administrator; audited. Naming the groups it already has changes nothing and is allowed
    to anyone (a client that sends back what it read). True when the groups changed."""
    if not check_visibility_change(actor, repository, names):
        return False
    before = sorted(repository.visible_to_groups.values_list("name", flat=True))
    groups = groups_named(names)
    repository.visible_to_groups.set(groups)
    record_visibility_change(actor, repository, before, sorted(group.name for group in groups))
    return True


def record_visibility_change(
    actor: Actor, repository: Repository, before: Sequence[str], after: Sequence[str]
) -> None:
    actor.record(
        "repository.visibility",
        str(repository.pk),
        {"name": repository.name, "from": list(before), "to": list(after)},
    )
