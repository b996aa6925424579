"""URL routes of the llm app (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import path

from llm.views import ConfigView

urlpatterns = [
    path("config", ConfigView.as_view(), name="config"),
]
