"""URL routes of ask (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
