"""Django admin for operators: repositories and their index jobs, files and chunks (read-only)."""

from __future__ import annotations

from django.contrib import admin

from indexing.models import Chunk, IndexJob, Repository, SourceFile


class IndexJobInline(admin.TabularInline):
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

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "url",
        "branch",
        "status",
        "file_count",
        "chunk_count",
        "embedded_count",
        "last_indexed_commit",
        "updated_at",
    )
    list_filter = ("status",)
    search_fields = ("name", "url")
    readonly_fields = (
        "id",
        "status",
        "error",
        "last_indexed_commit",
        "last_indexed_at",
        "active_generation",
        "file_count",
        "chunk_count",
        "embedded_count",
        "size_bytes",
        "indexed_bytes",
        "created_at",
        "updated_at",
    )
    inlines = [IndexJobInline]


@admin.register(IndexJob)
class IndexJobAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "repository",
        "kind",
        "state",
        "files_done",
        "chunks_total",
        "chunks_embedded",
        "duration",
        "created_at",
    )
    list_filter = ("state", "kind")
    search_fields = ("repository__name", "celery_task_id", "error")
    readonly_fields = [field.name for field in IndexJob._meta.fields]

    @admin.display(description="duration (s)")
    def duration(self, job: IndexJob) -> str:
        seconds = job.duration_seconds
        return "" if seconds is None else f"{seconds:.1f}"

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = (
        "path",
        "repository",
        "generation",
        "language",
        "size_bytes",
        "is_test",
        "is_doc",
    )
    list_filter = ("language", "is_test", "is_doc")
    search_fields = ("path",)
    readonly_fields = [field.name for field in SourceFile._meta.fields]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("path", "start_line", "end_line", "symbol", "kind", "language", "repository")
    list_filter = ("language", "kind", "is_test", "is_doc")
    search_fields = ("path", "symbol")
    exclude = ("search_vector",)
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name != "search_vector"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False
