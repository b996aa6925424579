"""Who may see which repository: a ``Viewer`` for every read path, applied in SQL.

A repository with no visibility groups is visible to every account; otherwise only to members of
one of its groups (and to administrators). Every read path (search of every kind, ask, the file
view, MCP tools, repository and job lists, counts and the evaluation command) narrows
``Repository`` rows with ``indexing.visible.visible_repositories(viewer)`` before anything else,
so a repository a viewer cannot see answers exactly like one that does not exist.

The default ``Viewer()`` sees only unrestricted repositories: code that forgets to say who is
asking fails safe. ``Viewer.everything()`` is for administrators and maintenance code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accounts.roles import Role, role_of


@dataclass(frozen=True)
class Viewer:
    group_ids: frozenset[int] = field(default_factory=frozenset)
    sees_everything: bool = False
    username: str = ""

    @classmethod
    def everything(cls, username: str = "") -> Viewer:
        return cls(sees_everything=True, username=username)


def viewer_for(user: Any) -> Viewer:
    """The viewer for a Django user (anonymous: unrestricted repositories only)."""
    role = role_of(user)
    if role is None:
        return Viewer()
    if role >= Role.ADMIN:
        return Viewer.everything(user.get_username())
    group_ids = frozenset(user.groups.values_list("pk", flat=True))
    return Viewer(group_ids=group_ids, username=user.get_username())
