"""Browsing a repository at a commit: file pages (``blob``), directory pages (``tree``).

Addresses are ``indexing.permalinks``'s: ``/repos/<name or id>/-/blob/<commit>/<path>`` and
``/-/tree/<commit>/<dir>``; ``HEAD`` (or a prefix of the indexed commit) means the indexed
commit, and an indexed branch's name the commit it was indexed at (``frontend.address_commits``).
The same addresses typed without the ``/-/`` redirect to them. Everything is read from the
clone's git objects at that commit, never from a working tree: a path is only ever a key looked
up in git trees, and ``..``, ``.``, empty segments and NUL are refused before that. At the indexed commit a file page also offers go to definition and
find references (``static/frontend/file.js``, through ``/api/symbols``). The old address
``/repos/<id>/file?path=&start=&end=`` redirects to the permalink. A file page has a file-tree
sidebar (``frontend.file_tree``) and links to its history and blame (``frontend.history_views``);
a directory page shows its README (``frontend.readme``).

A repository the account may not see answers exactly like one that does not exist.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_GET
from dulwich.errors import NotGitRepository

from accounts.visibility import Viewer, viewer_for
from frontend.access import reader_page
from frontend.address_commits import AddressRefused, resolve
from frontend.file_tree import TreeRow, sidebar_rows
from frontend.highlighting import highlight_lines
from frontend.readme import MAX_README_BYTES, find_readme, relative_resolver, render_readme
from indexing.clone_paths import repository_dir
from indexing.git.tree import MODE_GITLINK, MODE_SYMLINK, MODE_TREE, GitTreeReader
from indexing.models import Repository, SourceFile
from indexing.permalinks import blame_url, blob_url, history_url, tree_url
from indexing.repository_refs import (
    AmbiguousRepository,
    RepositoryNotFound,
    find_repository,
    link_refs,
)
from indexing.upstream_urls import upstream_file_url
from indexing.visible import visible_repositories

MAX_SHOWN_BYTES = 2 * 1024 * 1024
GIT_ERRORS = (NotGitRepository, OSError, KeyError, ValueError)


class PageRefused(Exception):
    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class Place:
    repository: Repository
    ref: str  # how links name the repository
    commit: str  # the full commit id shown
    path: str
    at_index: bool  # the commit is the indexed one
    branch: str = ""  # the indexed branch whose indexed commit this is


def refused(request: HttpRequest, exc: PageRefused) -> HttpResponse:
    return render(
        request,
        "frontend/not_found.html",
        {"message": exc.message, "page": "file"},
        status=exc.status,
    )


def _repository(ref: str, viewer: Viewer) -> Repository:
    try:
        return find_repository(ref, viewer)
    except RepositoryNotFound as exc:
        near = exc.details.get("suggestions")
        hint = f" Did you mean {' or '.join(near)}?" if near else ""
        raise PageRefused(
            f"There is no repository with this name or id (it may have been deleted).{hint}"
        ) from None
    except AmbiguousRepository as exc:
        ids = ", ".join(exc.details["ids"])
        raise PageRefused(
            f"Several repositories are named “{ref}”; open one by its id ({ids}).", 400
        ) from None


def clean_path(path: str) -> str:
    """``path`` without leading/trailing slashes; ``PageRefused`` (400) for ``..``, ``.``,
    empty segments, backslashes or NUL -- none can name anything in a git tree."""
    path = (path or "").strip("/")
    parts = path.split("/") if path else []
    if "\x00" in path or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise PageRefused("That is not a path inside a repository.", 400)
    return path


def place_of(request: HttpRequest, ref: str, commit: str, path: str) -> Place:
    viewer = viewer_for(request.user)
    repository = _repository(ref, viewer)
    try:
        named = resolve(repository, commit, clean_path(path))
    except AddressRefused as exc:
        raise PageRefused(exc.message, exc.status) from None
    link = link_refs([(repository.pk, repository.name)], viewer)[repository.pk]
    at_index = named.commit == repository.last_indexed_commit and repository.active_generation > 0
    return Place(repository, link, named.commit, named.path, at_index, named.branch)


def crumbs(place: Place) -> list[tuple[str, str]]:
    """(label, tree address) from the repository's root to the path's parent directory."""
    trail = [(place.repository.name, tree_url(place.ref, place.commit))]
    parts = place.path.split("/") if place.path else []
    for depth in range(1, len(parts)):
        trail.append((parts[depth - 1], tree_url(place.ref, place.commit, "/".join(parts[:depth]))))
    return trail


def _read_file(place: Place) -> tuple[bytes, str] | HttpResponse:
    """The file's bytes and language, or a redirect to the directory of that name."""
    source = None
    if place.at_index:
        source = SourceFile.objects.filter(
            repository=place.repository,
            generation=place.repository.active_generation,
            path=place.path,
        ).first()
    try:
        with GitTreeReader(repository_dir(place.repository.pk)) as reader:
            if source is not None:
                return reader.read_blob(source.blob_sha), source.language
            entry = reader.entry_at(place.commit, place.path)
            if entry is not None and entry[0] == MODE_TREE:
                return HttpResponseRedirect(tree_url(place.ref, place.commit, place.path))
            if entry is None or entry[0] == MODE_GITLINK:
                raise PageRefused(
                    f"{place.repository.name} has no file at “{place.path}” at this commit."
                )
            return reader.read_blob(entry[1]), ""
    except GIT_ERRORS:
        raise PageRefused(
            f"The clone of {place.repository.name} no longer holds this commit or file;"
            " re-index it, or open it at HEAD."
        ) from None


@require_GET
@reader_page
def blob_view(request: HttpRequest, ref: str, commit: str, path: str) -> HttpResponse:
    try:
        place = place_of(request, ref, commit, path)
        if not place.path:
            return HttpResponseRedirect(tree_url(place.ref, place.commit))
        read = _read_file(place)
    except PageRefused as exc:
        return refused(request, exc)
    if isinstance(read, HttpResponse):
        return read
    data, language = read
    binary = b"\x00" in data[:8000]
    too_big = len(data) > MAX_SHOWN_BYTES
    shown = "" if binary or too_big else data.decode("utf-8", errors="replace")
    lines = highlight_lines(shown, path=place.path, language=language) if shown else []
    repository = place.repository
    return render(
        request,
        "frontend/file.html",
        {
            "page": "file",
            "repository": repository,
            "place": place,
            "path": place.path,
            "name": place.path.rsplit("/", 1)[-1],
            "commit": place.commit,
            "language": language,
            "size_bytes": len(data),
            "binary": binary,
            "too_big": too_big,
            "lines": lines,
            "crumbs": crumbs(place),
            "permalink": blob_url(place.ref, place.commit, place.path),
            "head_url": blob_url(place.ref, "HEAD", place.path),
            "navigable": place.at_index and bool(language),
            "upstream_url": upstream_file_url(repository.url, place.commit, place.path),
            "history_url": history_url(place.ref, place.commit, place.path),
            "blame_url": blame_url(place.ref, place.commit, place.path),
            "sidebar": _sidebar(place),
        },
    )


def _sidebar(place: Place) -> list[TreeRow]:
    try:
        with GitTreeReader(repository_dir(place.repository.pk)) as reader:
            return sidebar_rows(reader, place.ref, place.commit, place.path)
    except GIT_ERRORS:
        return []


@require_GET
@reader_page
def tree_view(request: HttpRequest, ref: str, commit: str, path: str | None = None) -> HttpResponse:
    try:
        place = place_of(request, ref, commit, path or "")
        try:
            with GitTreeReader(repository_dir(place.repository.pk)) as reader:
                rows = reader.list_directory(place.commit, place.path)
                entry = None if rows is not None else reader.entry_at(place.commit, place.path)
                sizes = {
                    sha: reader.blob_size(sha)
                    for _, is_dir, mode, sha in rows or []
                    if not is_dir and mode != MODE_GITLINK
                }
                readme = _readme(reader, place, rows or [])
        except GIT_ERRORS:
            raise PageRefused(
                f"The clone of {place.repository.name} does not hold this commit; open it at HEAD."
            ) from None
        if rows is None:
            if entry is not None and entry[0] != MODE_GITLINK:
                return HttpResponseRedirect(blob_url(place.ref, place.commit, place.path))
            raise PageRefused(
                f"{place.repository.name} has no directory “{place.path}” at this commit."
            )
    except PageRefused as exc:
        return refused(request, exc)
    prefix = place.path + "/" if place.path else ""
    entries = [
        {
            "name": name,
            "is_dir": is_dir,
            "submodule": mode == MODE_GITLINK,
            "size": sizes.get(sha),
            "url": ""
            if mode == MODE_GITLINK
            else (tree_url if is_dir else blob_url)(place.ref, place.commit, prefix + name),
        }
        for name, is_dir, mode, sha in rows
    ]
    trail = crumbs(place)
    if place.path:
        trail.append((place.path.rsplit("/", 1)[-1], ""))
    return render(
        request,
        "frontend/tree.html",
        {
            "page": "file",
            "repository": place.repository,
            "place": place,
            "commit": place.commit,
            "entries": entries,
            "crumbs": trail,
            "permalink": tree_url(place.ref, place.commit, place.path),
            "parent_url": tree_url(place.ref, place.commit, place.path.rpartition("/")[0])
            if place.path
            else "",
            "history_url": history_url(place.ref, place.commit, place.path) if place.path else "",
            "readme": readme,
        },
    )


def _readme(
    reader: GitTreeReader, place: Place, rows: list[tuple[str, bool, int, str]]
) -> dict[str, object] | None:
    """The directory's README, rendered, with its permalink; None when it has none."""
    files = {
        name: sha
        for name, is_dir, mode, sha in rows
        if not is_dir and mode not in (MODE_GITLINK, MODE_SYMLINK)
    }
    name = find_readme(list(files))
    if name is None:
        return None
    prefix = place.path + "/" if place.path else ""

    def link(path: str) -> str:
        return (
            blob_url(place.ref, place.commit, path) if path else tree_url(place.ref, place.commit)
        )

    url = blob_url(place.ref, place.commit, prefix + name)
    if reader.blob_size(files[name]) > MAX_README_BYTES:  # not even read
        return {"name": name, "html": "", "url": url}
    html = render_readme(name, reader.read_blob(files[name]), relative_resolver(place.path, link))
    return {"name": name, "html": html, "url": url}


_UNDASHED = re.compile(r"/(blob|tree)/")


def _undashed_address(request: HttpRequest, ref: str) -> HttpResponse | None:
    """``/repos/<name>/blob/<commit>/<path>`` or ``.../tree/...`` typed without the ``/-/``
    that ends a name: a redirect to the permalink when what comes before ``/blob/`` names a
    repository the viewer may see (the browser keeps a ``#L10-L20``), else None."""
    viewer = viewer_for(request.user)
    for found in _UNDASHED.finditer(ref):
        name, rest = ref[: found.start()], ref[found.end() :]
        commit, _, path = rest.partition("/")
        if not name or not commit:
            continue
        try:
            find_repository(name, viewer, suggest=False)  # a probe: no suggestions to compute
        except (RepositoryNotFound, AmbiguousRepository):
            continue
        at = blob_url if found.group(1) == "blob" else tree_url
        return HttpResponseRedirect(at(name, commit, path))
    return None


@require_GET
@reader_page
def repository_root(request: HttpRequest, ref: str) -> HttpResponse:
    """``/repos/<name or id>``: its files at the indexed commit."""
    try:
        place = place_of(request, ref.strip("/"), "HEAD", "")
    except PageRefused as exc:
        undashed = _undashed_address(request, ref.strip("/")) if exc.status == 404 else None
        return undashed or refused(request, exc)
    return HttpResponseRedirect(tree_url(place.ref, place.commit))


def _line_range(request: HttpRequest) -> tuple[int, int]:
    try:
        start = int(request.GET.get("start", "0"))
        end = int(request.GET.get("end", str(start)))
    except ValueError:
        return 0, 0
    if start < 1:
        return 0, 0
    return start, max(end, start)


@require_GET
@reader_page
def legacy_file_view(request: HttpRequest, repository_id: uuid.UUID) -> HttpResponse:
    """``/repos/<id>/file?path=…&start=…&end=…``: a redirect to the file's permalink."""
    viewer = viewer_for(request.user)
    repository = visible_repositories(viewer).filter(pk=repository_id).first()
    if repository is None:
        return refused(
            request, PageRefused("There is no repository with this id (it may have been deleted).")
        )
    path = request.GET.get("path", "")  # a NUL in it is a 400 (reposearch.request_guards)
    if not path:
        return refused(
            request, PageRefused(f"Which file? Add ?path=… to the address ({repository.name}).")
        )
    if not repository.active_generation or not repository.last_indexed_commit:
        return refused(request, PageRefused(f"{repository.name} has not finished indexing yet."))
    indexed = SourceFile.objects.filter(
        repository=repository, generation=repository.active_generation, path=path
    ).exists()
    if not indexed:
        return refused(
            request,
            PageRefused(
                f"{repository.name} has no indexed file at “{path}” at the indexed commit."
            ),
        )
    start, end = _line_range(request)
    ref = link_refs([(repository.pk, repository.name)], viewer)[repository.pk]
    return HttpResponseRedirect(blob_url(ref, repository.last_indexed_commit, path, start, end))
