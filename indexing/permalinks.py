"""Addresses of files and directories at a commit: ``/repos/<repo>/-/blob/<commit>/<path>``.

``<repo>`` is the repository's name (``acme/shop``: slashes and all) or, where a name does not
name one repository the viewer may see, its id (see ``indexing.repository_refs.link_refs``);
the ``/-/`` separator (as GitLab's) ends the name, so a name may hold ``/``. ``<commit>`` is a
full commit id, or ``HEAD`` for the indexed commit. ``#L10-L20`` marks lines. A file's history
is ``/-/commits/<commit>/<path>`` and its blame ``/-/blame/<commit>/<path>`` (GitLab's words).

They live beside the repository refs they are made of, so the search answers (below the pages)
and the pages (``frontend``) build them alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from accounts.visibility import Viewer

SAFE = "/@:~!$&'()*+,;="


def _segment(text: str) -> str:
    return quote(text, safe=SAFE)


def blob_url(
    ref: str, commit: str, path: str, start: int | None = None, end: int | None = None
) -> str:
    url = f"/repos/{_segment(ref)}/-/blob/{_segment(commit or 'HEAD')}/{_segment(path.strip('/'))}"
    if start:
        url += f"#L{start}" + (f"-L{end}" if end and end > start else "")
    return url


def history_url(ref: str, commit: str, path: str) -> str:
    """The commits that touched ``path``, from ``commit`` back."""
    return (
        f"/repos/{_segment(ref)}/-/commits/{_segment(commit or 'HEAD')}/{_segment(path.strip('/'))}"
    )


def blame_url(ref: str, commit: str, path: str, start: int | None = None) -> str:
    url = f"/repos/{_segment(ref)}/-/blame/{_segment(commit or 'HEAD')}/{_segment(path.strip('/'))}"
    return url + (f"#L{start}" if start else "")


def tree_url(ref: str, commit: str, path: str = "") -> str:
    url = f"/repos/{_segment(ref)}/-/tree/{_segment(commit or 'HEAD')}"
    path = path.strip("/")
    return url + (f"/{_segment(path)}" if path else "")


class Permalinks:
    """Blob addresses for answers naming several repositories, the names looked up once."""

    def __init__(self, repositories: Iterable[tuple[Any, str]], viewer: Viewer) -> None:
        from indexing.repository_refs import link_refs

        self.refs = link_refs(repositories, viewer)

    def blob(self, repo_id: Any, commit: str, path: str, start: int, end: int) -> str:
        return blob_url(self.refs.get(repo_id, str(repo_id)), commit, path, start, end)
