"""Django admin for operators: repositories (through the same service as the API), jobs, files
and chunks (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from accounts.actors import Actor
from accounts.admin_access import AdministratorsManage
from accounts.admin_audit import AuditedAdmin
from accounts.audit import client_address, record
from accounts.roles import Role, role_of
from indexing.exceptions import RepositoryRefused
from indexing.models import Chunk, IndexJob, Repository, SourceFile
from indexing.services.repositories import (
    add_repository,
    delete_repository,
    reindex_repository,
    validate_new_repository,
)
from indexing.services.visibility import ensure_may_change_visibility, record_visibility_change


def _file_view_url(repository_id: Any, path: str, start: int = 0, end: int = 0) -> str:
    """The web UI's file view (the active generation), at the chunk's lines when given."""
    query: dict[str, str | int] = {"path": path}
    if start:
        query.update(start=start, end=end)
    anchor = f"#L{start}" if start else ""
    return f"{reverse('frontend:file', args=[repository_id])}?{urlencode(query)}{anchor}"


class IndexJobInline(AdministratorsManage, admin.TabularInline):
    model = IndexJob
    extra = 0
    can_delete = False
    fields = (
        "kind",
        "state",
        "files_done",
        "chunks_total",
        "chunks_embedded",
        "error",
        "created_at",
    )
    readonly_fields = fields
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[IndexJob]:
        return super().get_queryset(request).select_related("repository")  # for each job's title

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RepositoryAddForm(forms.ModelForm):
    """Validated exactly as ``POST /api/repos`` is (URL policy, duplicates, the limit)."""

    class Meta:
        model = Repository
        fields = ("url", "branch", "name", "contextual_summaries", "visible_to_groups")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False

    def validate_unique(self) -> None:
        """The service reports duplicates with a better message."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("url"):
            try:
                validate_new_repository(data["url"], data.get("branch"))
            except RepositoryRefused as error:
                raise forms.ValidationError(error.message) from None
        return data


@admin.register(Repository)
class RepositoryAdmin(AdministratorsManage, AuditedAdmin, admin.ModelAdmin):
    list_display = ("name", "url", "branch", "status", "file_count", "chunk_count",
                    "embedded_count", "last_indexed_commit", "updated_at")  # fmt: skip
    list_filter = ("status", "last_indexed_at", "managed_by_file")
    search_fields = ("name", "url", "last_indexed_commit")
    readonly_fields = ("id", "url", "branch", "managed_by_file", "status", "error", "last_indexed_commit",
                       "last_indexed_at", "active_generation", "file_count", "chunk_count",
                       "embedded_count", "size_bytes", "indexed_bytes", "created_at",
                       "updated_at")  # fmt: skip
    # The admin sees every repository; here it chooses who else may (no groups: every account).
    filter_horizontal = ("visible_to_groups",)
    inlines = [IndexJobInline]
    actions = ["reindex_selected"]  # with Django's own "Delete selected", through the service

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        if obj is None:
            kwargs["form"] = RepositoryAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ()
        if role_of(request.user) != Role.ADMIN:  # who may see it is an administrator's choice
            return ("visible_to_groups", *self.readonly_fields)
        return self.readonly_fields

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("url", "branch", "name", "contextual_summaries", "visible_to_groups")
        return ("name", "contextual_summaries", "visible_to_groups", *self.readonly_fields)

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        return self.inlines if obj is not None else []

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if not change:
            super().save_related(request, form, formsets, change)
            return
        repository = form.instance
        before = sorted(repository.visible_to_groups.values_list("name", flat=True))
        super().save_related(request, form, formsets, change)
        after = sorted(repository.visible_to_groups.values_list("name", flat=True))
        if before != after:
            actor = Actor(user=request.user, address=client_address(request), via="admin")
            ensure_may_change_visibility(actor)  # the field is read-only to others anyway
            record_visibility_change(actor, repository, before, after)

    def save_model(self, request: HttpRequest, obj: Repository, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        try:
            groups = [group.name for group in form.cleaned_data.get("visible_to_groups") or []]
            job = add_repository(
                obj.url, obj.branch, obj.name, obj.contextual_summaries, visibility_groups=groups
            )
        except RepositoryRefused as error:  # a race with another add since the form was validated
            self.message_user(request, error.message, messages.ERROR)
            raise
        obj.pk = job.repository.pk
        obj.refresh_from_db()
        self.message_user(request, f"Indexing queued (job {job.pk}).", messages.SUCCESS)

    def delete_model(self, request: HttpRequest, obj: Repository) -> None:
        delete_repository(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Repository]) -> None:
        for repository in queryset:
            delete_repository(repository)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """The confirmation page in a few lines: Django's default would list every chunk, and
        ask for delete permissions on files and chunks, which the service removes itself."""
        repositories = list(objs)
        summary = [
            f"{repository.name} ({repository.url}): its clone, {repository.file_count} files, "
            f"{repository.chunk_count} chunks and their vectors; a running job is cancelled"
            for repository in repositories
        ]
        counts = {
            "repositories": len(repositories),
            "index jobs": IndexJob.objects.filter(repository__in=repositories).count(),
            "files": sum(repository.file_count for repository in repositories),
            "chunks": sum(repository.chunk_count for repository in repositories),
        }
        return summary, counts, set(), []

    @admin.action(description="Re-index selected repositories")
    def reindex_selected(self, request: HttpRequest, queryset: QuerySet[Repository]) -> None:
        created = 0
        for repository in queryset:
            queued = reindex_repository(repository)[1]
            created += int(queued)
            record(
                "repository.reindex",
                user=request.user,
                address=client_address(request),
                target=str(repository.pk),
                details={"name": repository.name, "via": "admin", "queued": queued},
            )
        coalesced = queryset.count() - created
        self.message_user(
            request,
            f"{created} re-index job(s) queued; {coalesced} already running.",
            messages.SUCCESS,
        )


def _table(headers: tuple[str, ...], rows: list[tuple[Any, ...]], empty: str) -> SafeString:
    if not rows:
        return format_html('<span class="quiet">{}</span>', empty)
    head = format_html_join("", "<th>{}</th>", ((header,) for header in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows),
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


STAGE_ORDER = ("cloning", "walking", "chunking", "storing", "embedding")
JOB_JSON_FIELDS = ("stage_timings", "failures", "skipped_files")  # drawn as tables instead


@admin.register(IndexJob)
class IndexJobAdmin(AdministratorsManage, AuditedAdmin, admin.ModelAdmin):
    list_display = ("title", "kind", "state", "files_done", "files_skipped", "chunks_total",
                    "chunks_embedded", "duration", "error_summary", "created_at")  # fmt: skip
    list_display_links = ("title",)
    list_filter = ("state", "kind", ("repository", admin.RelatedOnlyFieldListFilter))
    search_fields = ("repository__name", "repository__url", "celery_task_id", "error")
    list_select_related = ("repository",)
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("repository", "kind", "state", "error", "commit", "generation",
                           "duration", "created_at", "started_at", "stage_started_at",
                           "finished_at", "heartbeat_at", "attempts", "celery_task_id")}),
        ("Counters", {"fields": ("files_total", "files_done", "files_skipped", "chunks_total",
                                 "chunks_embedded", "summaries_total", "summaries_done",
                                 "bytes_fetched")}),
        ("Stage timings", {"fields": ("stage_timings_table",)}),
        ("Failures", {"fields": ("failures_table",)}),
        ("Skipped files", {"fields": ("skipped_files_table",)}),
    )  # fmt: skip
    readonly_fields = [
        *(field.name for field in IndexJob._meta.fields if field.name not in JOB_JSON_FIELDS),
        "duration",
        "stage_timings_table",
        "failures_table",
        "skipped_files_table",
    ]

    @admin.display(description="job", ordering="repository__name")
    def title(self, job: IndexJob) -> str:
        return f"{job.repository.name} #{job.pk}"

    @admin.display(description="duration (s)")
    def duration(self, job: IndexJob) -> str:
        seconds = job.duration_seconds
        return "" if seconds is None else f"{seconds:.1f}"

    @admin.display(description="error")
    def error_summary(self, job: IndexJob) -> str:
        return job.error[:120]

    @admin.display(description="seconds per stage")
    def stage_timings_table(self, job: IndexJob) -> SafeString:
        timings = dict(job.stage_timings or {})
        names = [name for name in STAGE_ORDER if name in timings]
        names += sorted(name for name in timings if name not in STAGE_ORDER)
        rows = [(name, f"{float(timings[name]):.2f}") for name in names]
        if rows:
            rows.append(("total", f"{sum(float(timings[name]) for name in names):.2f}"))
        return _table(("stage", "seconds"), rows, "no stage finished yet")

    @admin.display(description="failures")
    def failures_table(self, job: IndexJob) -> SafeString:
        rows = [
            (item.get("path") or item.get("stage") or "", item.get("reason", ""))
            for item in job.failures or []
        ]
        return _table(("file or stage", "reason"), rows, "none")

    @admin.display(description="skipped files")
    def skipped_files_table(self, job: IndexJob) -> SafeString:
        listed = job.skipped_files or []
        rows = [(item.get("path", ""), item.get("reason", "")) for item in listed]
        table = _table(
            ("path", "reason"), rows, "none" if not job.files_skipped else "not recorded"
        )
        if job.files_skipped > len(listed) and listed:
            more = job.files_skipped - len(listed)
            return format_html("{}<p>… and {} more, not listed.</p>", table, more)
        return table

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # read-only: the worker writes it (the page is a view, without Save)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a job row is the worker's progress record; delete the repository instead


@admin.register(SourceFile)
class SourceFileAdmin(AdministratorsManage, admin.ModelAdmin):
    list_display = (
        "path",
        "repository",
        "generation",
        "language",
        "size_bytes",
        "is_test",
        "is_doc",
    )
    list_filter = (
        "language",
        "is_test",
        "is_doc",
        ("repository", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("path", "blob_sha", "repository__name")
    list_select_related = ("repository",)
    readonly_fields = [field.name for field in SourceFile._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # files belong to an index generation; re-index or delete the repository

    def view_on_site(self, obj: SourceFile) -> str:
        return _file_view_url(obj.repository_id, obj.path)


@admin.register(Chunk)
class ChunkAdmin(AdministratorsManage, admin.ModelAdmin):
    list_display = ("path", "start_line", "end_line", "symbol", "kind", "language", "repository")
    list_filter = (
        "language",
        "kind",
        "is_test",
        "is_doc",
        ("repository", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("path", "symbol", "content_hash", "repository__name")
    list_select_related = ("repository",)
    show_full_result_count = False  # counting millions of chunks on every page is slow
    exclude = ("search_vector",)
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name != "search_vector"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # chunks belong to an index generation; re-index or delete the repository

    def view_on_site(self, obj: Chunk) -> str:
        return _file_view_url(obj.repository_id, obj.path, obj.start_line, obj.end_line)
