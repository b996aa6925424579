"""The Locate page: paste an issue or a stack trace, get the files (and functions) to change.

A plain form: GET shows it, POST (with the session's CSRF token) runs ``search.localize`` as the
signed-in account -- the same service and answer document as ``POST /api/localize`` -- and
renders the ranked files, each with the functions that made it rank, the reasons, and links to
the file view at the function's lines. Bad input (an empty or too long issue, a repository the
account may not see) is said on the page, as the API would say it.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts.visibility import viewer_for
from frontend.access import reader_page
from indexing.visible import visible_repositories
from search.exact.errors import QueryRejected
from search.localize.response import localize_document
from search.localize.service import MAX_ISSUE_CHARS, LocalizeRequest, localize
from search.retrieval.scope import UnknownBranch, UnknownRepositories


def _repo_ids(values: list[str]) -> list[UUID] | None:
    """The checked repositories' ids; a value that is no id is no repository (a 404 below)."""
    ids = []
    for value in values:
        try:
            ids.append(UUID(value))
        except ValueError:
            ids.append(UUID(int=0))
    return ids or None


@require_http_methods(["GET", "POST"])
@reader_page
def locate_page(request: HttpRequest) -> HttpResponse:
    viewer = viewer_for(request.user)
    repositories = list(
        visible_repositories(viewer).only("id", "name", "status", "active_generation")
    )
    context: dict[str, Any] = {
        "page": "locate",
        "repositories": repositories,
        "has_indexed": any(repo.active_generation for repo in repositories),
        "max_issue_chars": MAX_ISSUE_CHARS,
        "issue": "",
        "chosen": set(),
        "include_tests": False,
    }
    status = 200
    if request.method == "POST":
        issue = request.POST.get("issue", "")
        chosen = request.POST.getlist("repo")
        include_tests = request.POST.get("tests") == "on"
        context.update(issue=issue, chosen=set(chosen), include_tests=include_tests)
        if not issue.strip():
            context["error"] = "Paste an issue or a stack trace to locate."
            status = 400
        elif len(issue) > MAX_ISSUE_CHARS:
            context["error"] = (
                f"The issue is {len(issue):,} characters; the limit is {MAX_ISSUE_CHARS:,}."
            )
            status = 413
        else:
            try:
                result = localize(
                    LocalizeRequest(
                        issue=issue,
                        viewer=viewer,
                        repo_ids=_repo_ids(chosen),
                        include_tests=include_tests,
                    )
                )
            except (UnknownRepositories, UnknownBranch, QueryRejected):
                context["error"] = "No such repository among those you may see."
                status = 404
            else:
                context["answer"] = localize_document(result, viewer)
    return render(request, "frontend/locate.html", context, status=status)
