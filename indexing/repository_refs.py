"""Naming a repository by its id or by its name, for paths, filters and links.

Repository names are not unique (the same URL on two branches may share one) and may hold
``/`` (``acme/shop``). ``find_repository`` accepts either an id (a UUID) or a name and looks
only among the repositories a ``Viewer`` may see, so a restricted repository is "not found"
exactly like a missing one, and an ambiguity names only visible ids. ``link_refs`` gives the
segment links should use for each repository: its name when no other visible repository shares
it and fits in an address (``linkable``), else its id (which always resolves).
"""

from __future__ import annotations

import difflib
import itertools
import uuid
from collections import Counter
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from accounts.visibility import Viewer
from indexing.models import Repository
from indexing.visible import visible_repositories
from reposearch.domain_errors import DomainError

MAX_REF_CHARS = 300
NEAR_NAME_RATIO = 0.75  # difflib's similarity from which a name is suggested
MAX_NAMES_COMPARED = 5_000  # visible names a missing one is compared with
MIN_NAME_SUGGESTED, MAX_NAME_SUGGESTED = 3, 200  # names outside these lengths get none


class RepositoryNotFound(DomainError, LookupError):
    """No repository the viewer may see has this id or name; ``nearest`` are visible names
    like it (``details.suggestions``)."""

    code = "not_found"
    http_status = HTTPStatus.NOT_FOUND

    def __init__(self, ref: str, nearest: list[str] | None = None) -> None:
        self.ref = ref[:MAX_REF_CHARS]
        hint = f" — did you mean {', '.join(repr(n) for n in nearest)}?" if nearest else ""
        self.message = f"no repository {self.ref!r}{hint}"
        self.details: dict[str, Any] = {"repository": self.ref}
        if nearest:
            self.details |= {"suggestions": nearest, "suggestion": nearest[0]}
        super().__init__(self.message)


class AmbiguousRepository(DomainError, LookupError):
    """Several visible repositories have this name; ``details.ids`` lists them."""

    code = "ambiguous_repository"

    def __init__(self, ref: str, ids: list[str]) -> None:
        self.ref = ref
        self.message = f"several repositories are named {ref!r}: use one of their ids"
        self.details: dict[str, Any] = {"repository": ref, "ids": ids}
        super().__init__(self.message)


def parse_id(ref: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(ref)
    except ValueError:
        return None


def find_repository(ref: str, viewer: Viewer, *, suggest: bool = True) -> Repository:
    """The repository ``ref`` (an id or a name) names among those ``viewer`` may see; a name
    none has is ``RepositoryNotFound`` with the nearest names (unless not ``suggest``)."""
    ref = (ref or "").strip()
    if not ref or len(ref) > MAX_REF_CHARS or "\x00" in ref:
        raise RepositoryNotFound(ref)
    visible = visible_repositories(viewer)
    repository_id = parse_id(ref)
    if repository_id is not None:
        found = visible.filter(pk=repository_id).first()
        if found is None:
            raise RepositoryNotFound(ref)
        return found
    matches = list(visible.filter(name=ref).order_by("created_at")[:5])
    if not matches:
        if not suggest:
            raise RepositoryNotFound(ref)
        names = visible.order_by("name").values_list("name", flat=True)[:MAX_NAMES_COMPARED]
        raise RepositoryNotFound(ref, nearest_names(ref, dict.fromkeys(names)))
    if len(matches) > 1:
        raise AmbiguousRepository(ref, [str(m.pk) for m in matches])
    return matches[0]


def nearest_names(pattern: str, names: Iterable[str], most: int = 3) -> list[str]:
    """Up to ``most`` of ``names`` (the first ``MAX_NAMES_COMPARED``) nearest to ``pattern``:
    compared whole, by their last part and by their starts as long as it (``reqests`` is near
    ``requests-2.32.3``). A pattern of one or two letters starts too many names to suggest any,
    and one longer than a name may be gets none: no typo is that long, and it would cost the
    more."""
    if not MIN_NAME_SUGGESTED <= len(pattern) <= MAX_NAME_SUGGESTED:
        return []
    lowered = pattern.lower()
    length = len(lowered)
    matcher: difflib.SequenceMatcher[str] = difflib.SequenceMatcher()
    matcher.set_seq2(lowered)

    def score(name: str) -> float:
        low = name.lower()
        last = low.rsplit("/", 1)[-1]
        best = 0.0
        for form in dict.fromkeys((low, last, low[:length], last[:length])):
            matcher.set_seq1(form)  # the cheap upper bounds first, as difflib's own search does
            if matcher.real_quick_ratio() < NEAR_NAME_RATIO:
                continue
            if matcher.quick_ratio() >= NEAR_NAME_RATIO:
                best = max(best, matcher.ratio())
        return best

    scored = sorted((-score(name), name) for name in itertools.islice(names, MAX_NAMES_COMPARED))
    return [name for negative, name in scored if -negative >= NEAR_NAME_RATIO][:most]


def link_refs(repositories: Iterable[tuple[Any, str]], viewer: Viewer) -> dict[Any, str]:
    """``{id: segment}`` for ``(id, name)`` pairs: the name where it names one visible
    repository (and does not look like an id), else the id."""
    pairs = list(repositories)
    names = {name for _, name in pairs}
    counts = Counter(
        visible_repositories(viewer).filter(name__in=names).values_list("name", flat=True)
    )
    return {
        pk: name if counts.get(name, 0) == 1 and linkable(name) else str(pk) for pk, name in pairs
    }


def linkable(name: str) -> bool:
    """Whether ``name`` can stand for its repository in an address: not an id, and nothing the
    addresses' ``/-/`` separator or an empty segment would cut short."""
    return (
        parse_id(name) is None
        and "/-/" not in name
        and not name.endswith("/-")
        and not name.startswith("/")
        and not name.endswith("/")
        and "//" not in name
        and name.strip() == name
    )
