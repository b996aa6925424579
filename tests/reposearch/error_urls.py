"""The project's URLs plus views that fail, to see what users get for a 500."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from rest_framework.request import Request
from rest_framework.views import APIView

from reposearch.urls import handler400, handler403, handler404, handler500, urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


def page_that_fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret detail: DATABASE_URL=postgresql://user:pw@db/x")


class ApiThatFails(APIView):
    def get(self, request: Request) -> HttpResponse:
        raise RuntimeError("secret detail: DATABASE_URL=postgresql://user:pw@db/x")


urlpatterns = [
    path("boom/", page_that_fails),
    path("api/boom-plain", page_that_fails),
    path("api/boom", ApiThatFails.as_view()),
    *urlpatterns,
]
