"""URL routes of the indexing API."""

from __future__ import annotations

from django.urls import path

from indexing.api import views, webhook_views

urlpatterns = [
    path("repos", views.RepositoryListView.as_view(), name="repository-list"),
    path(
        "repos/<str:repository_id>", views.RepositoryDetailView.as_view(), name="repository-detail"
    ),
    path(
        "repos/<str:repository_id>/reindex",
        views.RepositoryReindexView.as_view(),
        name="repository-reindex",
    ),
    path(
        "repos/<str:repository_id>/jobs", views.RepositoryJobsView.as_view(), name="repository-jobs"
    ),
    path("jobs/<int:job_id>", views.JobDetailView.as_view(), name="job-detail"),
    path(
        "repos/<str:repository_id>/webhook",
        webhook_views.RepositoryWebhookView.as_view(),
        name="repository-webhook",
    ),
    path(
        "repos/<str:repository_id>/webhook/rotate",
        webhook_views.RepositoryWebhookRotateView.as_view(),
        name="repository-webhook-rotate",
    ),
    path(
        "hooks/<str:repository_id>",
        webhook_views.WebhookDeliveryView.as_view(),
        name="webhook-delivery",
    ),
]
