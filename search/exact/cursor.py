"""The opaque page cursor of exact and regex search: a keyset position plus what came before.

``next_cursor`` is URL-safe base64 of ``{"k": [repo name, path, file id], "f": files before,
"m": matches before, "q": query fingerprint}``. A cursor from another query, or one that does
not decode, is a 400 -- continuing someone else's position would silently skip results.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from search.exact.candidates import SortKey
from search.exact.errors import QueryRejected

MAX_CURSOR_CHARS = 4000


def invalid_cursor() -> QueryRejected:
    return QueryRejected(
        "invalid_cursor",
        "cursor is not a next_cursor of this query (send it back unchanged, with the same query)",
        {"field": "cursor"},
    )


def pack_cursor(body: dict[str, Any]) -> str:
    """An opaque cursor: the body as unpadded URL-safe base64 of its JSON."""
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


def unpack_cursor(cursor: str) -> dict[str, Any]:
    """The body of a cursor ``pack_cursor`` made; ``invalid_cursor()`` for anything else."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise invalid_cursor()
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise invalid_cursor() from None
    if not isinstance(body, dict):
        raise invalid_cursor()
    return body


@dataclass(frozen=True)
class PagePosition:
    after: SortKey | None = None
    files_before: int = 0
    matches_before: int = 0


def query_fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def encode_cursor(position: PagePosition, fingerprint: str) -> str:
    assert position.after is not None
    body = {
        "k": list(position.after),
        "f": position.files_before,
        "m": position.matches_before,
        "q": fingerprint,
    }
    return pack_cursor(body)


def decode_cursor(cursor: str | None, fingerprint: str) -> PagePosition:
    if not cursor:
        return PagePosition()
    bad = invalid_cursor()
    body = unpack_cursor(cursor)
    try:
        name, path, file_id = body["k"]
        files, matches = int(body["f"]), int(body["m"])
        if not (isinstance(name, str) and isinstance(path, str) and isinstance(file_id, int)):
            raise ValueError("bad key")
        if "\x00" in name + path or not 0 <= file_id < 2**63:
            raise ValueError("bad key")
    except (ValueError, KeyError, TypeError):
        raise bad from None
    if body.get("q") != fingerprint or files < 0 or matches < 0:
        raise bad
    return PagePosition(after=(name, path, file_id), files_before=files, matches_before=matches)


MAX_OFFSET = 1000


def encode_offset(offset: int, fingerprint: str) -> str:
    """A cursor for results paged by position (``sym:`` definitions)."""
    body = {"o": offset, "q": fingerprint}
    return pack_cursor(body)


def decode_offset(cursor: str | None, fingerprint: str) -> int:
    if not cursor:
        return 0
    bad = invalid_cursor()
    body = unpack_cursor(cursor)
    try:
        offset = body["o"]
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError("bad offset")
    except (ValueError, KeyError, TypeError):
        raise bad from None
    if body.get("q") != fingerprint or not 0 < offset <= MAX_OFFSET:
        raise bad
    return offset
