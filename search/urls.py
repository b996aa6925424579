"""URL routes of the search app (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import path

from search.localize.views import LocalizeView
from search.symbols.views import DefinitionListView, ReferenceListView, SymbolListView
from search.views import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
    path("localize", LocalizeView.as_view(), name="localize"),
    path("symbols", SymbolListView.as_view(), name="symbols"),
    path("symbols/definitions", DefinitionListView.as_view(), name="symbol-definitions"),
    path("symbols/references", ReferenceListView.as_view(), name="symbol-references"),
]
