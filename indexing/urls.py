"""URL routes of the indexing API.

``{repository_id}`` is an id or a name; names may hold ``/`` (sent URL-encoded, ``acme%2Fshop``,
which arrives decoded), so the routes with a suffix come before the repository's own route. A
name that itself ends in ``/jobs``, ``/reindex`` or ``/webhook`` is reached by its id.
"""

from __future__ import annotations

from django.urls import path, re_path

from indexing.api import views, webhook_views

REPO = r"^repos/(?P<repository_id>.+?)"

urlpatterns = [
    path("repos", views.RepositoryListView.as_view(), name="repository-list"),
    re_path(
        REPO + r"/webhook/rotate$",
        webhook_views.RepositoryWebhookRotateView.as_view(),
        name="repository-webhook-rotate",
    ),
    re_path(
        REPO + r"/webhook$",
        webhook_views.RepositoryWebhookView.as_view(),
        name="repository-webhook",
    ),
    re_path(REPO + r"/reindex$", views.RepositoryReindexView.as_view(), name="repository-reindex"),
    re_path(REPO + r"/jobs$", views.RepositoryJobsView.as_view(), name="repository-jobs"),
    re_path(REPO + r"$", views.RepositoryDetailView.as_view(), name="repository-detail"),
    path("jobs/<int:job_id>", views.JobDetailView.as_view(), name="job-detail"),
    path(
        "hooks/<str:repository_id>",
        webhook_views.WebhookDeliveryView.as_view(),
        name="webhook-delivery",
    ),
]
