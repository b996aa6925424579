"""The index stage holds a batch of a repository at a time, not all of it: with batches of 8
files the stage never holds more than two batches of decoded files (the walk's kept texts and
the batch being read), where it used to hold every file; and what it stores, counts and skips
is exactly what one batch over the whole tree gives. The store commits batches no bigger than
its limits (chunks or bytes) plus one file."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from dulwich.repo import Repo

from indexing.git.tree import GitTreeReader
from indexing.models import Chunk, IndexJob, SourceFile
from indexing.services.storing import FileToStore, StoredChunk, store_files
from indexing.walking import WalkedFile
from tests import factories
from tests.indexing.git_server import commit_files
from tests.indexing.real_run import fetch_and_index, mirror, reindex

BATCH_FILES = 8
MODULES = 60


def _files() -> dict[str, object]:
    files: dict[str, object] = {
        f"pkg/module_{n:02}.py": f"def function_{n}(value):\n    return value * {n}\n\n\n"
        f"class Model{n}:\n    def method(self):\n        return function_{n}(1)\n"
        for n in range(MODULES)
    }
    # A vendored directory spanning several batches is reported once; other skips as usual.
    files |= {f"node_modules/lib/file_{n:02}.js": f"module.exports = {n};\n" for n in range(20)}
    files |= {
        ".gitignore": "generated/\n",
        "generated/out.py": "GENERATED = True\n",
        "docs/guide.md": "# Guide\n\nHow to use it.\n",
        "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "big.txt": "x" * (1_048_576 + 10),
    }
    return files


def _layout(repository_id: object) -> list[tuple[Any, ...]]:
    return list(
        Chunk.objects.filter(repository_id=repository_id)
        .order_by("path", "index")
        .values_list("path", "index", "start_line", "end_line", "symbol", "content", "generation")
    )


def _counters(job: IndexJob) -> tuple[Any, ...]:
    return (job.state, job.files_total, job.files_done, job.files_skipped, job.chunks_total,
            job.skipped_files, job.failures)  # fmt: skip


class HeldFiles:
    """Counts the decoded files (``WalkedFile``) alive whenever the stage reads a blob."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = 0
        self.most = 0
        original = GitTreeReader.read_blob

        def read_blob(reader: GitTreeReader, sha: str) -> bytes:
            self.reads += 1
            if self.reads % 3 == 0:
                held = sum(1 for item in gc.get_objects() if type(item) is WalkedFile)
                self.most = max(self.most, held)
            return original(reader, sha)

        monkeypatch.setattr(GitTreeReader, "read_blob", read_blob)


@pytest.mark.django_db
def test_small_batches_hold_few_files_and_store_what_one_batch_stores(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    whole = fetch_and_index(mirror(tmp_path / "one", _files()), "acme/whole")

    settings.REPO_SEARCH_INDEX_BATCH_FILES = BATCH_FILES
    held = HeldFiles(monkeypatch)
    batched = fetch_and_index(mirror(tmp_path / "two", _files()), "acme/batched")

    assert held.reads > MODULES  # every indexed file was read (twice: walk, then chunk)
    assert 0 < held.most <= 2 * BATCH_FILES, held.most  # not all 61 indexed files at once
    assert _layout(batched.repository_id) == _layout(whole.repository_id)
    assert _counters(batched) == _counters(whole)
    assert batched.files_total == MODULES + 1 and batched.chunks_total > 2 * MODULES
    skipped = [entry["path"] for entry in batched.skipped_files]
    assert skipped.count("node_modules/") == 1
    assert {"generated/", "image.png", "big.txt", "node_modules/"} <= set(skipped)
    assert batched.state == "storing" and "storing" in batched.stage_timings


@pytest.mark.django_db
def test_a_batched_reindex_keeps_the_rows_of_unchanged_files(tmp_path: Path, settings: Any) -> None:
    settings.REPO_SEARCH_INDEX_BATCH_FILES = BATCH_FILES
    path = mirror(tmp_path, _files())
    job = fetch_and_index(path, "acme/reindexed")
    from indexing.services.stages.embed import run_embed

    run_embed(job.pk)
    repository = IndexJob.objects.get(pk=job.pk).repository
    before = dict(SourceFile.objects.filter(repository=repository).values_list("path", "id"))
    source = Repo(str(path))
    commit_files(
        source, {**_files(), "pkg/module_07.py": "def changed():\n    return 7\n"},  # type: ignore[dict-item]
        message="second", parent=source.refs[b"refs/heads/main"],
    )  # fmt: skip

    repository = reindex(repository)

    after = dict(SourceFile.objects.filter(repository=repository).values_list("path", "id"))
    assert after.keys() == before.keys()
    moved = {p for p in before if before[p] != after[p]}
    assert moved == {"pkg/module_07.py"}  # only the changed file was chunked and stored again
    assert Chunk.objects.filter(repository=repository, symbol="changed").exists()
    latest = IndexJob.objects.filter(repository=repository).order_by("-pk").first()
    assert latest is not None
    assert (latest.files_total, latest.files_done) == (MODULES + 1, MODULES + 1)
    assert repository.chunk_count == Chunk.objects.filter(repository=repository).count()


def _file(path: str, chunks: int, size: int) -> FileToStore:
    pieces = [
        StoredChunk(i, i + 1, i + 1, f"s_{i}", "function", f"# {i}\n" + "x" * size)
        for i in range(chunks)
    ]
    return FileToStore(path, "e" * 40, size * chunks, "python", False, False, chunks, pieces)


@pytest.mark.django_db(transaction=True)
def test_the_store_commits_batches_within_its_chunk_and_byte_limits() -> None:
    repository = factories.indexed_repository("s/a", ["def a():\n    pass"])
    db = connection.settings_dict
    outside = psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
        password=db.get("PASSWORD") or None, dbname=db["NAME"], autocommit=True,
    )  # fmt: skip
    committed: list[tuple[int, int]] = []  # (chunks, chunk bytes) visible after each batch

    def on_batch(_: int) -> None:
        row = outside.execute(
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM indexing_chunk"
            " WHERE repository_id = %s AND generation = 2",
            [repository.pk],
        ).fetchone()
        assert row is not None
        committed.append((row[0], row[1]))

    # 40 files of 3 chunks of ~10 kB: the byte limit (64 kB) binds before the chunk limit (50).
    files = (_file(f"src/f{n}.py", 3, 10_000) for n in range(40))
    try:
        written = store_files(
            repository.pk, 2, files, on_batch=on_batch, batch_chunks=50, batch_bytes=64_000
        )
    finally:
        outside.close()
    assert written == 120
    sizes = [
        (c - pc, b - pb)
        for (c, b), (pc, pb) in zip(committed, [(0, 0), *committed[:-1]], strict=True)
    ]
    one_file = 3 * 10_010
    assert len(sizes) > 1 and sum(chunks for chunks, _ in sizes) == 120
    assert all(size < 64_000 + one_file for _, size in sizes), sizes
    assert all(chunks < 50 + 3 for chunks, _ in sizes), sizes
