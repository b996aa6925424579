"""A file's history (``/repos/<repo>/-/commits/<commit>/<path>``) and blame
(``/-/blame/<commit>/<path>``), read from the clone by ``indexing.git.history``.

Both are bounded (commits and seconds; blame also the file's size) and say so past the
bound, and both say when the history ends at the clone's shallow boundary instead of at the
file's first commit. Every commit links to the file at that commit (a permalink). A
repository the account may not see answers exactly like one that does not exist
(``browse_views.place_of``).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.html import escape
from django.views.decorators.http import require_GET

from frontend.access import reader_page
from frontend.browse_views import GIT_ERRORS, PageRefused, Place, crumbs, place_of, refused
from frontend.highlighting import highlight_lines
from indexing.clone_paths import repository_dir
from indexing.git.history import (
    BLAME_MAX_BYTES,
    BLAME_MAX_COMMITS,
    BLAME_MAX_LINES,
    BLAME_MAX_SECONDS,
    HISTORY_MAX_COMMITS,
    HISTORY_MAX_SECONDS,
    blame_file,
    file_history,
)
from indexing.git.tree import MODE_GITLINK, MODE_TREE, GitTreeReader
from indexing.permalinks import blame_url, blob_url, history_url, tree_url
from indexing.upstream_urls import upstream_history_url


def _checked_place(request: HttpRequest, ref: str, commit: str, path: str) -> tuple[Place, bool]:
    """The place, and whether the path is a directory; ``PageRefused`` when nothing is there."""
    place = place_of(request, ref, commit, path)
    if not place.path:  # a branch name took the whole path (/-/commits/release/1.0)
        raise PageRefused("History and blame are of a file or a directory: add its path.", 400)
    try:
        with GitTreeReader(repository_dir(place.repository.pk)) as reader:
            entry = reader.entry_at(place.commit, place.path)
    except GIT_ERRORS:
        raise PageRefused(
            f"The clone of {place.repository.name} does not hold this commit; open it at HEAD."
        ) from None
    if entry is None or entry[0] == MODE_GITLINK or not place.path:
        raise PageRefused(f"{place.repository.name} has no file at “{place.path}” at this commit.")
    return place, entry[0] == MODE_TREE


def _context(place: Place, is_dir: bool) -> dict[str, object]:
    at = tree_url if is_dir else blob_url
    trail = crumbs(place)
    trail.append((place.path.rsplit("/", 1)[-1], at(place.ref, place.commit, place.path)))
    return {
        "page": "file",
        "repository": place.repository,
        "place": place,
        "path": place.path,
        "commit": place.commit,
        "is_dir": is_dir,
        "crumbs": trail,
        "file_url": at(place.ref, place.commit, place.path),
        "history_url": history_url(place.ref, place.commit, place.path),
        "blame_url": "" if is_dir else blame_url(place.ref, place.commit, place.path),
        "upstream_history_url": upstream_history_url(
            place.repository.url, place.commit, place.path
        ),
    }


@require_GET
@reader_page
def history_view(request: HttpRequest, ref: str, commit: str, path: str) -> HttpResponse:
    try:
        place, is_dir = _checked_place(request, ref, commit, path)
        try:
            history = file_history(repository_dir(place.repository.pk), place.commit, place.path)
        except GIT_ERRORS:
            raise PageRefused(
                f"The clone of {place.repository.name} does not hold this commit."
            ) from None
    except PageRefused as exc:
        return refused(request, exc)
    at = tree_url if is_dir else blob_url
    commits = [
        {
            "info": info,
            "url": at(place.ref, info.sha, place.path),
            "tree_url": tree_url(place.ref, info.sha),
            "blame_url": "" if is_dir else blame_url(place.ref, info.sha, place.path),
        }
        for info in history.commits
    ]
    context = _context(place, is_dir)
    context.update(
        {
            "commits": commits,
            "history": history,
            "permalink": history_url(place.ref, place.commit, place.path),
            "max_commits": HISTORY_MAX_COMMITS,
            "max_seconds": HISTORY_MAX_SECONDS,
            "oldest": history.commits[-1].sha if history.commits else "",
        }
    )
    return render(request, "frontend/history.html", context)


@require_GET
@reader_page
def blame_view(request: HttpRequest, ref: str, commit: str, path: str) -> HttpResponse:
    try:
        place, is_dir = _checked_place(request, ref, commit, path)
        if is_dir:
            return HttpResponseRedirect(history_url(place.ref, place.commit, place.path))
        try:
            blame = blame_file(repository_dir(place.repository.pk), place.commit, place.path)
        except GIT_ERRORS:
            raise PageRefused(
                f"The clone of {place.repository.name} does not hold this commit or file."
            ) from None
    except PageRefused as exc:
        return refused(request, exc)
    source = "\n".join(line.text for line in blame.lines)
    shown = {row.number: row.html for row in highlight_lines(source, path=place.path)}
    rows = []
    previous = ""
    for line in blame.lines:
        sha = line.commit.sha
        rows.append(
            {
                "line": line,
                "html": shown.get(line.number) or escape(line.text),
                "first": sha != previous,
                "url": blob_url(place.ref, sha, place.path),
            }
        )
        previous = sha
    context = _context(place, is_dir)
    context.update(
        {
            "rows": rows,
            "blame": blame,
            "permalink": blame_url(place.ref, place.commit, place.path),
            "max_commits": BLAME_MAX_COMMITS,
            "max_seconds": BLAME_MAX_SECONDS,
            "max_bytes": BLAME_MAX_BYTES,
            "max_lines": BLAME_MAX_LINES,
        }
    )
    return render(request, "frontend/blame.html", context)
