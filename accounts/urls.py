"""URL routes of the accounts API (mounted under ``api/``)."""

from __future__ import annotations

from django.urls import path

from accounts.api import views

urlpatterns = [
    path("tokens", views.TokenListView.as_view(), name="token-list"),
    path("tokens/<int:token_id>", views.TokenDetailView.as_view(), name="token-detail"),
    path("audit", views.AuditLogView.as_view(), name="audit-log"),
]
