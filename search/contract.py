"""The search contract: ``POST /api/search``'s request, built in one place for every caller.

- ``search_request(fields, **executor_only)`` turns the API's request fields, validated by the
  caller, into the executor's ``SearchRequest``. ``fields`` uses the API's names
  (``REQUEST_FIELDS``); any of them but ``query`` may be left out and then takes the executor's
  default; empty lists mean "no filter". ``executor_only`` sets request fields the API does not
  expose (the evaluation harness's configurations; their ``tuning`` too). ``viewer`` says who is asking (``accounts.visibility.Viewer``;
  left out: unrestricted repositories only). The view, ``manage.py search``, the MCP tool,
  ``ask`` and the evaluation harness all build their requests here.
- ``repository_ids(refs, viewer)`` turns the API's ``repo_ids`` / ``repos`` entries -- ids or
  names, as API paths take them (``indexing.repository_refs``) -- into ids.
The response document every mode answers is built by ``search.response``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.repository_refs import (
    MAX_NAMES_COMPARED,
    AmbiguousRepository,
    nearest_names,
    parse_id,
)
from indexing.visible import visible_repositories
from search.exact.errors import QueryRejected
from search.types import SearchRequest

# API field -> SearchRequest field
REQUEST_FIELDS = {
    "query": "query",
    "limit": "limit",
    "use_bm25": "use_bm25",
    "use_vector": "use_vector",
    "use_rerank": "use_rerank",
    "use_expansion": "use_expansion",
    "use_cross_encoder": "cross_encoder",
    "repo_ids": "repo_ids",
    "languages": "languages",
    "paths": "path_globs",
    "include_tests": "include_tests",
    "include_docs": "include_docs",
    "branches": "branches",
    "group_by": "group_by_file",
}
LIST_FIELDS = frozenset({"repo_ids", "languages", "paths", "branches"})


def search_request(
    fields: Mapping[str, Any], *, viewer: Viewer | None = None, **executor_only: Any
) -> SearchRequest:
    """The executor's request for validated API ``fields`` (plus ``executor_only`` fields the
    API does not have, e.g. ``exclude_languages``), searching what ``viewer`` may see."""
    unknown = set(fields) - set(REQUEST_FIELDS)
    if unknown:
        raise ValueError(f"not search request fields: {sorted(unknown)}")
    values: dict[str, Any] = {}
    for name, value in fields.items():
        if name in LIST_FIELDS:
            value = list(value) if value else None
        elif name == "group_by":
            value = value == "file"
        values[REQUEST_FIELDS[name]] = value
    twice = set(values) & set(executor_only)
    if twice:
        raise ValueError(f"set both as API fields and as executor-only ones: {sorted(twice)}")
    return SearchRequest(**values, **executor_only, viewer=viewer or Viewer())


def repository_ids(refs: list[str] | None, viewer: Viewer) -> list[UUID] | None:
    """Ids for ``refs`` (ids or names; None or [] for no filter). A name no repository
    ``viewer`` may see has is a ``QueryRejected("unknown_repository")`` (404) naming it -- a
    restricted repository's name answers exactly like one that does not exist -- and a name
    several visible repositories share is ``AmbiguousRepository`` (400, their ids). Ids are
    passed on as they are: an unknown one is the executor's ``UnknownRepositories`` (404)."""
    if not refs:
        return None
    ids: list[UUID] = []
    names = [ref.strip() for ref in refs if parse_id(ref.strip()) is None]
    found: dict[str, list[UUID]] = {}
    if names:
        rows = visible_repositories(viewer).filter(name__in=names).order_by("created_at")
        for pk, name in rows.values_list("pk", "name"):
            found.setdefault(name, []).append(pk)
    missing = [name for name in dict.fromkeys(names) if name not in found]
    if missing:
        # The nearest names among those ``viewer`` may see (never another's), and the prefix
        # ``repo:`` would take (``requests`` for ``requests-2.32.3``).
        by_name = visible_repositories(viewer).order_by("name")
        visible = list(by_name.values_list("name", flat=True)[:MAX_NAMES_COMPARED])
        nearest = {n: near for n in missing[:5] if (near := nearest_names(n, visible))}
        if len(missing) == 1:
            first = nearest.get(missing[0])
            message = f"no repository named {missing[0]!r}" + (
                f" — did you mean {', '.join(first)}?" if first else ""
            )
        else:
            hints = [f"{n!r}: did you mean {', '.join(near)}?" for n, near in nearest.items()]
            message = "no repositories named " + ", ".join(repr(n) for n in missing)
            message += (" — " + "; ".join(hints)) if hints else ""
        raise QueryRejected(
            "unknown_repository",
            message,
            {"repos": missing, **({"suggestions": nearest} if nearest else {})},
        )
    for ref in refs:
        pk = parse_id(ref.strip())
        if pk is not None:
            ids.append(pk)
            continue
        matches = found[ref.strip()]
        if len(matches) > 1:
            raise AmbiguousRepository(ref.strip(), [str(m) for m in matches])
        ids.append(matches[0])
    return list(dict.fromkeys(ids))
