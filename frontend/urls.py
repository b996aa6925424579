"""URL routes of the web UI (mounted at the site root)."""

from __future__ import annotations

from django.urls import path, re_path

from frontend import (
    ask_views,
    audit_views,
    browse_views,
    history_views,
    locate_views,
    people_views,
    symbol_views,
    token_views,
    views,
)

app_name = "frontend"

urlpatterns = [
    path("", views.search_page, name="search"),
    path("repos/", views.repositories_page, name="repositories"),
    path("repos/<uuid:repository_id>/file", browse_views.legacy_file_view, name="file"),
    # A repository's name may hold "/" (acme/shop): "/-/" ends it (indexing.permalinks).
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
    re_path(
        r"^repos/(?P<ref>.+?)/-/commits/(?P<commit>[^/]+)/(?P<path>.+)$",
        history_views.history_view,
        name="history",
    ),
    re_path(
        r"^repos/(?P<ref>.+?)/-/blame/(?P<commit>[^/]+)/(?P<path>.+)$",
        history_views.blame_view,
        name="blame",
    ),
    path("symbols/definitions", symbol_views.definitions_page, name="symbol-definitions"),
    path("symbols/references", symbol_views.references_page, name="symbol-references"),
    path("ask/", ask_views.ask_page, name="ask"),
    path("locate/", locate_views.locate_page, name="locate"),
    path("settings/", views.settings_page, name="settings"),
    path("tokens/", token_views.tokens_page, name="tokens"),
    path("audit/", audit_views.audit_page, name="audit"),
    path("people/", people_views.people_page, name="people"),
    path("people/groups", people_views.create_group, name="people-groups"),
    path("people/<int:user_id>/", people_views.person_page, name="person"),
    path("people/<int:user_id>/role", people_views.person_role, name="person-role"),
    path("people/<int:user_id>/groups", people_views.person_groups, name="person-groups"),
    path(
        "people/<int:user_id>/tokens",
        people_views.person_token_create,
        name="person-token-create",
    ),
    path(
        "people/<int:user_id>/tokens/<int:token_id>/revoke",
        people_views.person_token_revoke,
        name="person-token-revoke",
    ),
    path("ui/results", views.render_results, name="render-results"),
    path("ui/answer", ask_views.render_answer, name="render-answer"),
    re_path(r"^repos/(?P<ref>.+?)/?$", browse_views.repository_root, name="repository-root"),
]
