"""URL routes of the indexing API."""

from __future__ import annotations

from django.urls import path

from indexing.api import views

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
]
