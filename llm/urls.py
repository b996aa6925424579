"""URL routes of the llm app."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
