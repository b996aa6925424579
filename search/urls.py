"""URL routes of the search app (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import path

from search.views import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
]
