"""Thin views: parse with a serializer, call one service, serialize the result.

A repository in a path is its id or its name (URL-encoded: ``acme%2Fshop``; a name several
repositories share is a 400 listing their ids). Every view reads repositories and jobs through
the requesting account's viewer
(``accounts.visibility``): a repository it may not see, and its jobs, answer exactly like ones
that do not exist (404, the same body).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.audit import AuditedWrites
from accounts.visibility import Viewer, viewer_for
from indexing.api.serializers import (
    IndexJobSerializer,
    RepositoryCreateSerializer,
    RepositorySerializer,
    RepositoryUpdateSerializer,
)
from indexing.models import IndexJob, Repository
from indexing.repository_refs import RepositoryNotFound, find_repository, parse_id
from indexing.selectors import annotated_repositories, annotated_repository
from indexing.services.repositories import (
    add_repository,
    delete_repository,
    reindex_repository,
    update_repository,
)
from indexing.services.visibility import change_visibility, check_visibility_change
from indexing.visible import repository_filter, visible_repositories
from reposearch.api_errors import ApiError
from reposearch.api_schema import error_responses


def _check_id(repository_id: str) -> None:
    try:
        uuid.UUID(str(repository_id))
    except ValueError:
        raise ApiError(
            f"{repository_id[:80]!r} is not a repository id (a UUID)",
            code="not_found",
            status_code=404,
        ) from None


def _not_found(repository_id: str, nearest: list[str] | None = None) -> ApiError:
    if parse_id(str(repository_id)) is None:
        hint = f" — did you mean {', '.join(repr(n) for n in nearest)}?" if nearest else ""
        return ApiError(
            f"no repository named {str(repository_id)[:300]!r}{hint}",
            code="not_found",
            status_code=404,
            details={"suggestions": nearest, "suggestion": nearest[0]} if nearest else None,
        )
    return ApiError(f"no repository with id {repository_id}", code="not_found", status_code=404)


def viewer_of(request: Request) -> Viewer:
    """Whose view of the repositories this request reads with."""
    return viewer_for(request.user)


def _visible(request: Request) -> QuerySet[Repository]:
    return visible_repositories(viewer_of(request))


def _get_repository(request: Request, repository_id: str) -> Repository:
    """The repository the request's account may see, by id or by name (``acme%2Fshop``), else
    the 404 of a missing one; a name several visible repositories share is a 400 listing them."""
    try:
        return find_repository(repository_id, viewer_of(request))
    except RepositoryNotFound as exc:
        raise _not_found(repository_id, exc.details.get("suggestions")) from None


def _serialised(
    repository_id: Any, repositories: QuerySet[Repository] | None = None
) -> dict[str, Any]:
    """The repository as the API shows it, read with the selector's facts (no query per row)."""
    repository = annotated_repository(repository_id, repositories)
    if repository is None:  # deleted meanwhile, or not visible
        raise _not_found(str(repository_id))
    return dict(RepositorySerializer(repository).data)


class RepositoryListView(AuditedWrites, APIView):
    audit_actions = {"POST": "repository.add"}

    @extend_schema(responses={200: RepositorySerializer(many=True), **error_responses(400)})
    def get(self, request: Request) -> Response:
        rows = annotated_repositories(_visible(request))
        return Response(RepositorySerializer(rows, many=True).data)

    @extend_schema(
        request=RepositoryCreateSerializer,
        responses={
            202: RepositorySerializer,
            **error_responses(
                400,
                409,
                413,
                503,
                s400="Invalid input: a URL that is refused (private address, relative path, "
                "ssh ...), a branch name git refuses, wrong types, unknown fields.",
                s409="The same repository (any spelling of its URL) and branch is indexed "
                "already (`details.repository_id`), or another branch of a restricted one "
                "(`details.add_branch`; nothing named to those who may not see it), or the "
                "repository limit is reached (`details.limit`).",
                s503="The URL's host could not be looked up right now; try again.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ApiError("the body must be a JSON object", code="invalid")
        serializer = RepositoryCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = add_repository(**serializer.validated_data, viewer=viewer_of(request))
        if serializer.validated_data.get("visibility_groups"):
            request.audit_details = {  # type: ignore[attr-defined]
                "visibility_groups": sorted(serializer.validated_data["visibility_groups"])
            }
        # The writer just chose its visibility: answer with it even if they are not in a group.
        body = _serialised(job.repository_id)
        body["job"] = IndexJobSerializer(job).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class RepositoryDetailView(AuditedWrites, APIView):
    audit_actions = {"PATCH": "repository.patch", "DELETE": "repository.delete"}

    @extend_schema(responses={200: RepositorySerializer, **error_responses(404)})
    def get(self, request: Request, repository_id: str) -> Response:
        repository = _get_repository(request, repository_id)
        return Response(_serialised(repository.pk, _visible(request)))

    @extend_schema(
        request=RepositoryUpdateSerializer,
        responses={
            200: RepositorySerializer,
            **error_responses(
                400,
                403,
                404,
                413,
                s403="Changing `visibility_groups` needs the admin role.",
            ),
        },
    )
    def patch(self, request: Request, repository_id: str) -> Response:
        """Rename, opt in to contextual summaries (the response shows their cost in calls), or
        set who may see it (``visibility_groups``: administrators only, else 403)."""
        repository = _get_repository(request, repository_id)
        if not isinstance(request.data, dict):
            raise ApiError("the body must be a JSON object", code="invalid")
        serializer = RepositoryUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        groups = changes.pop("visibility_groups", None)
        actor = Actor.of_request(request, via="api")
        # Only administrators change visibility: refused before any other field is written.
        if groups is not None:
            check_visibility_change(actor, repository, groups)
        update_repository(repository, **changes)
        if groups is not None:
            change_visibility(actor, repository, groups)
        # Answered with the change made, even when the writer restricted it away from themselves.
        return Response(_serialised(repository.pk))

    @extend_schema(responses={204: None, **error_responses(404)})
    def delete(self, request: Request, repository_id: str) -> Response:
        delete_repository(_get_repository(request, repository_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RepositoryReindexView(AuditedWrites, APIView):
    audit_actions = {"POST": "repository.reindex"}

    @extend_schema(request=None, responses={202: IndexJobSerializer, **error_responses(404)})
    def post(self, request: Request, repository_id: str) -> Response:
        job, created = reindex_repository(_get_repository(request, repository_id))
        body = IndexJobSerializer(job).data
        body["coalesced"] = not created
        return Response(body, status=status.HTTP_202_ACCEPTED)


class JobDetailView(APIView):
    @extend_schema(responses={200: IndexJobSerializer, **error_responses(404)})
    def get(self, request: Request, job_id: int) -> Response:
        # A job of a repository the account may not see is a 404 like a missing one.
        jobs = IndexJob.objects.filter(repository_filter(viewer_of(request), "repository__"))
        job = jobs.filter(pk=job_id).first()
        if job is None:
            raise ApiError(
                f"no job with id {job_id}; a job is deleted with its repository, so its"
                " repository may have been deleted",
                code="not_found",
                status_code=404,
                details={"job": job_id},
            )
        return Response(IndexJobSerializer(job).data)


class RepositoryJobsView(APIView):
    @extend_schema(responses={200: IndexJobSerializer(many=True), **error_responses(404)})
    def get(self, request: Request, repository_id: str) -> Response:
        repository = _get_repository(request, repository_id)
        return Response(IndexJobSerializer(repository.jobs.all()[:50], many=True).data)
