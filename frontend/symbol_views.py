"""Go to definition and find references as pages (``/symbols/definitions?name=&repo=&lang=``,
``/symbols/references?name=&repo=``): what a search hit's names link to.

The same services as ``/api/symbols/definitions`` and ``/api/symbols/references``
(``search.symbols``), so the page and the API agree; every place links to the file at the
indexed commit (a permalink). One definition is opened directly, as a code host does; several
are listed. A name the services refuse, or a repository the account may not see, is a 404 page
with the reason.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.visibility import viewer_for
from frontend.access import reader_page
from reposearch.domain_errors import DomainError
from search.symbols.documents import definitions_doc
from search.symbols.references import find_references, reference_doc
from search.symbols.service import go_to_definition

MAX_DEFINITIONS = 50
MAX_REFERENCES = 200


def symbol_links(name: str, repo: str, language: str) -> tuple[str, str]:
    """(definition page, references page) of ``name`` as a hit in ``repo`` (its name) and
    ``language`` shows it: the hit's repository and language come first among definitions,
    references are those in its repository."""
    definition = {
        "name": name,
        **({"repo": repo} if repo else {}),
        **({"lang": language} if language else {}),
    }
    references = {"name": name, **({"repo": repo} if repo else {})}
    return (
        reverse("frontend:symbol-definitions") + "?" + urlencode(definition),
        reverse("frontend:symbol-references") + "?" + urlencode(references),
    )


def _refused(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return render(
        request,
        "frontend/not_found.html",
        {"message": exc.api_message(), "page": "search"},
        status=exc.api_status() if exc.api_status() in (400, 404) else 400,
    )


@require_GET
@reader_page
def definitions_page(request: HttpRequest) -> HttpResponse:
    name, repo = request.GET.get("name", ""), request.GET.get("repo") or None
    try:
        answer = go_to_definition(
            name,
            viewer_for(request.user),
            repo=repo,
            lang=request.GET.get("lang") or None,
            limit=MAX_DEFINITIONS,
        )
    except DomainError as exc:
        return _refused(request, exc)
    hits = definitions_doc(answer.hits, viewer_for(request.user), snippet=True)
    if len(hits) == 1 and request.GET.get("list") != "1":
        return HttpResponseRedirect(hits[0]["url"])
    return _page(request, "definitions", answer.query, repo, hits, answer.truncated)


@require_GET
@reader_page
def references_page(request: HttpRequest) -> HttpResponse:
    name, repo = request.GET.get("name", ""), request.GET.get("repo") or None
    try:
        answer = find_references(name, viewer_for(request.user), repo=repo, limit=MAX_REFERENCES)
    except DomainError as exc:
        return _refused(request, exc)
    hits = [reference_doc(ref) for ref in answer.references]
    return _page(request, "references", answer.name, repo, hits, answer.truncated)


def _page(
    request: HttpRequest,
    what: str,
    name: str,
    repo: str | None,
    hits: list[dict[str, Any]],
    truncated: bool,
) -> HttpResponse:
    definition_url, references_url = symbol_links(name, repo or "", "")
    return render(
        request,
        "frontend/symbols.html",
        {
            "page": "search",
            "what": what,
            "name": name,
            "repo": repo,
            "hits": hits,
            "truncated": truncated,
            "definition_url": definition_url,
            "references_url": references_url,
        },
    )
