"""Pages of the web UI: search, repositories, settings and the file view.

The pages talk to the public API from the browser (``/api/search``, ``/api/repos``,
``/api/config``); the server only renders what needs Pygments: search results
(``render_results``); files and directories are ``frontend.browse_views``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.db.models import F
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from accounts.visibility import Viewer, viewer_for
from frontend.access import account_page, may, reader_fragment, reader_page
from frontend.pipeline import build_pipeline
from frontend.result_facets import facet_links
from frontend.results import build_results
from frontend.search_summary import describe_filters, mode_label, notices
from indexing.models import SourceFile
from indexing.visible import visible_repositories
from llm.config import CHAT_PROVIDERS, EMBEDDING_PROVIDERS


def _languages(viewer: Viewer) -> list[str]:
    """The languages of what the viewer's searches see (each repository's active generation):
    the language filter's choices. (How many files of a search's results each holds is the
    results' facets: ``frontend.result_facets``.)"""
    visible = visible_repositories(viewer).filter(active_generation__gt=0)
    return list(
        SourceFile.objects.filter(
            repository__in=visible, generation=F("repository__active_generation")
        )
        .exclude(language="")
        .values_list("language", flat=True)
        .distinct()
        .order_by("language")
    )


@require_GET
@reader_page
def search_page(request: HttpRequest) -> HttpResponse:
    viewer = viewer_for(request.user)
    visible = visible_repositories(viewer)
    repositories = list(visible.only("id", "name", "status", "active_generation", "file_count"))
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


@require_POST
@reader_fragment
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
    # Only a hybrid search ranks by full-text and vector lists; other modes' counts are 0s.
    ranked = response.get("mode") in (None, "hybrid")
    facets = facet_links(response, query) if offset == 0 else None
    return render(
        request,
        "frontend/_results.html",
        {
            "query": query,
            "results": results,
            "pipeline": build_pipeline(response.get("trace")),
            "total_bm25_hits": response.get("total_bm25_hits") if ranked else None,
            "total_vector_hits": response.get("total_vector_hits") if ranked else None,
            "bm25_hits_lower": response.get("total_bm25_hits_is_lower_bound") is True,
            "vector_hits_lower": response.get("total_vector_hits_is_lower_bound") is True,
            "total": response.get("total"),
            "total_is_lower_bound": response.get("total_is_lower_bound"),
            "match_total": response.get("match_total"),
            "only_weak_matches": response.get("only_weak_matches") is True,
            # A lone identifier's lines that hold it exactly (docs/search.md): 0 is "it occurs
            # nowhere", which the ranked results alone cannot say.
            "exact_matches": response.get("exact_matches") if ranked else None,
            "exact_matches_lower": response.get("exact_matches_is_lower_bound") is True,
            "match_total_is_lower_bound": response.get(
                "match_total_is_lower_bound", response.get("total_is_lower_bound")
            ),
            "truncated": response.get("truncated"),
            "mode": mode_label(response.get("mode")),
            "searched": describe_filters(search_request, repo_names, ranked=ranked),
            "ranked": ranked,
            "notices": notices(response.get("notices")),
            "facets": facets,
            "facet_groups": [("Repositories", facets.repositories), ("Languages", facets.languages)]
            if facets
            else [],
        },
    )


@require_GET
@reader_page
def repositories_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/repositories.html",
        {
            "page": "repositories",
            "can_write": may(request.user, "write"),
            "max_repos": settings.REPO_SEARCH_MAX_REPOS,
            "max_size_mb": settings.REPO_SEARCH_MAX_REPO_SIZE_MB,
            "allow_local_paths": settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
            "allow_private_hosts": settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        },
    )


@require_GET
@account_page
def settings_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/settings.html",
        {
            "page": "settings",
            "can_configure": may(request.user, "admin"),
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
