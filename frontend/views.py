"""Pages of the web UI: search, repositories, settings and the file view.

The pages talk to the public API from the browser (``/api/search``, ``/api/repos``,
``/api/config``); the server only renders what needs Pygments: search results
(``render_results``) and whole files (``file_view``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from dulwich.errors import NotGitRepository

from accounts.visibility import Viewer, viewer_for, visible_repositories
from frontend.highlighting import highlight_lines
from frontend.results import build_pipeline, build_results, describe_filters
from indexing.clone_paths import repository_dir
from indexing.git.tree import GitTreeReader
from indexing.models import SourceFile
from indexing.upstream_urls import upstream_file_url
from llm.config import CHAT_PROVIDERS, EMBEDDING_PROVIDERS


def _languages(viewer: Viewer) -> list[str]:
    """Languages present in what the viewer's searches see (each repository's active generation)."""
    languages: set[str] = set()
    visible = visible_repositories(viewer)
    for repo_id, generation in visible.filter(active_generation__gt=0).values_list(
        "pk", "active_generation"
    ):
        languages.update(
            SourceFile.objects.filter(repository_id=repo_id, generation=generation)
            .exclude(language="")
            .values_list("language", flat=True)
            .distinct()
        )
    return sorted(languages)


@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    viewer = viewer_for(request.user)
    visible = visible_repositories(viewer)
    repositories = list(visible.only("id", "name", "status", "active_generation"))
    return render(
        request,
        "frontend/search.html",
        {
            "page": "search",
            "repositories": repositories,
            "languages": _languages(viewer),
            "has_indexed": any(repo.active_generation for repo in repositories),
        },
    )


@csrf_exempt  # renders the JSON it is given and changes nothing: no forgery to guard against
@require_POST
def render_results(request: HttpRequest) -> HttpResponse:
    """HTML for one search: the pipeline diagram and the results, from the API's JSON."""
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return HttpResponseBadRequest("expected a JSON body")
    if not isinstance(body, dict) or not isinstance(body.get("response"), dict):
        return HttpResponseBadRequest('expected {"request": {...}, "response": {...}}')
    raw_request = body.get("request")
    search_request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
    wrong = _wrongly_typed(search_request)
    if wrong:
        return HttpResponseBadRequest(wrong)
    response: dict[str, Any] = body["response"]
    query = str(response.get("query") or search_request.get("query") or "")
    repo_ids = [str(rid) for rid in search_request.get("repo_ids") or [] if _is_uuid(str(rid))]
    viewer = viewer_for(request.user)
    visible = visible_repositories(viewer)
    repo_names = list(visible.filter(pk__in=repo_ids).values_list("name", flat=True))
    offset = body.get("offset")  # a further page ("load more") continues the numbering
    offset = offset if isinstance(offset, int) and 0 <= offset <= 100_000 else 0
    results = build_results(response, query, viewer, offset=offset)
    return render(
        request,
        "frontend/_results.html",
        {
            "query": query,
            "results": results,
            "pipeline": build_pipeline(response.get("trace")),
            "total_bm25_hits": response.get("total_bm25_hits"),
            "total_vector_hits": response.get("total_vector_hits"),
            "total": response.get("total"),
            "total_is_lower_bound": response.get("total_is_lower_bound"),
            "match_total": response.get("match_total"),
            "truncated": response.get("truncated"),
            "searched": describe_filters(search_request, repo_names),
        },
    )


@require_GET
def repositories_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/repositories.html",
        {
            "page": "repositories",
            "max_repos": settings.REPO_SEARCH_MAX_REPOS,
            "max_size_mb": settings.REPO_SEARCH_MAX_REPO_SIZE_MB,
            "allow_local_paths": settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
            "allow_private_hosts": settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        },
    )


@require_GET
def settings_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/settings.html",
        {
            "page": "settings",
            "chat_providers": list(CHAT_PROVIDERS),
            "embedding_providers": list(EMBEDDING_PROVIDERS),
        },
    )


REQUEST_LISTS = ("repo_ids", "languages", "paths")


def _wrongly_typed(search_request: dict[str, Any]) -> str:
    """What is mistyped in the search request echoed to ``/ui/results``, or ""."""
    for key in REQUEST_LISTS:
        value = search_request.get(key)
        if value is not None and not isinstance(value, list):
            return f"request.{key} must be a list or null"
    query = search_request.get("query")
    if query is not None and not isinstance(query, str):
        return "request.query must be a string"
    return ""


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(
        request, "frontend/not_found.html", {"message": message, "page": "file"}, status=404
    )


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
def file_view(request: HttpRequest, repository_id: uuid.UUID) -> HttpResponse:
    """The whole file at the indexed commit, highlighted, with line anchors and the hit marked.

    The path is only ever a lookup key among the files of the active generation; the content is
    read from git by that row's blob id, so no path reaches the file system.
    """
    # A repository the account may not see is "no repository", word for word.
    repository = visible_repositories(viewer_for(request.user)).filter(pk=repository_id).first()
    if repository is None:
        return _not_found(
            request, "There is no repository with this id (it may have been deleted)."
        )
    path = request.GET.get("path", "")  # a NUL in it is a 400 (reposearch.request_guards)
    if not path:
        return _not_found(request, f"Which file? Add ?path=… to the address ({repository.name}).")
    if not repository.active_generation:
        return _not_found(request, f"{repository.name} has not finished indexing yet.")
    source = SourceFile.objects.filter(
        repository=repository, generation=repository.active_generation, path=path
    ).first()
    if source is None:
        return _not_found(
            request, f"{repository.name} has no indexed file at “{path}” at the indexed commit."
        )
    try:
        with GitTreeReader(repository_dir(repository.pk)) as reader:
            data = reader.read_blob(source.blob_sha)
    except (NotGitRepository, OSError, KeyError, ValueError):
        return _not_found(
            request, f"The clone of {repository.name} no longer holds {path}; re-index it."
        )
    start, end = _line_range(request)
    commit = repository.last_indexed_commit
    lines = highlight_lines(
        data.decode("utf-8", errors="replace"), path=path, language=source.language
    )
    return render(
        request,
        "frontend/file.html",
        {
            "page": "file",
            "repository": repository,
            "source": source,
            "path": path,
            "commit": commit,
            "lines": lines,
            "start": start,
            "end": end,
            "upstream_url": upstream_file_url(
                repository.url, commit, path, start or None, end or None
            ),
        },
    )
