"""The Audit page: the audit log for administrators, filtered and paged through ``/api/audit``.

The filters are a plain GET form, so a filtered view is a link; ``audit.js`` passes them on to
the API and renders the rows, older pages on demand.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from frontend.access import account_page, may
from reposearch.views import error_response

FILTERS = ("actor", "action", "since", "until")


@require_GET
@account_page
def audit_page(request: HttpRequest) -> HttpResponse:
    if not may(request.user, "admin"):
        return error_response(
            request, 403, "permission_denied", "The audit log is for administrators."
        )
    return render(
        request,
        "frontend/audit.html",
        {"page": "audit", "filters": {name: request.GET.get(name, "") for name in FILTERS}},
    )
