"""URL routes of the web UI (mounted at the site root)."""

from __future__ import annotations

from django.urls import path, re_path

from frontend import ask_views, audit_views, browse_views, token_views, views

app_name = "frontend"

urlpatterns = [
    path("", views.search_page, name="search"),
    path("repos/", views.repositories_page, name="repositories"),
    path("repos/<uuid:repository_id>/file", browse_views.legacy_file_view, name="file"),
    # A repository's name may hold "/" (acme/shop): "/-/" ends it (frontend.permalinks).
    re_path(
        r"^repos/(?P<ref>.+?)/-/blob/(?P<commit>[^/]+)/(?P<path>.*)$",
        browse_views.blob_view,
        name="blob",
    ),
    re_path(
        r"^repos/(?P<ref>.+?)/-/tree/(?P<commit>[^/]+)(?:/(?P<path>.*))?$",
        browse_views.tree_view,
        name="tree",
    ),
    path("ask/", ask_views.ask_page, name="ask"),
    path("settings/", views.settings_page, name="settings"),
    path("tokens/", token_views.tokens_page, name="tokens"),
    path("audit/", audit_views.audit_page, name="audit"),
    path("ui/results", views.render_results, name="render-results"),
    path("ui/answer", ask_views.render_answer, name="render-answer"),
    re_path(r"^repos/(?P<ref>.+?)/?$", browse_views.repository_root, name="repository-root"),
]
