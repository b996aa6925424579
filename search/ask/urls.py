"""URL routes of ask (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import path

from search.ask.views import AskView

urlpatterns = [
    path("ask", AskView.as_view(), name="ask"),
]
