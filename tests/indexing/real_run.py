"""A real index run in the test process: the pipeline's own stage functions, one after another.

``add_repository`` creates the repository and its job exactly as the API does (the Celery task it
queues on commit never runs inside a test transaction); the fetch and index stages then run
here, so the job row holds what a worker would have written: counters, timings, skipped files.
"""

from __future__ import annotations

from pathlib import Path

from indexing.models import IndexJob, Repository
from indexing.services.repositories import add_repository, reindex_repository
from indexing.services.stages.embed import run_embed
from indexing.services.stages.fetch_and_index import run_fetch, run_index
from tests.indexing.git_server import Symlink, commit_files, init_bare_repo

# Indexed, and skipped for a reason each: vendored, ignored, binary, too large, symlink.
FILES: dict[str, object] = {
    "src/app/parser.py": "def parse(line):\n    return line.split(':', 1)\n",
    "src/app/util.js": "export function twice(x) {\n  return 2 * x;\n}\n",
    "README.md": "# Demo\n",
    "node_modules/lib/index.js": "module.exports = 1;\n",
    "generated/out.py": "GENERATED = True\n",
    ".gitignore": "generated/\n",
    "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
    "big.txt": "x" * (1_048_576 + 10),
    "link_passwd": Symlink("/etc/passwd"),
}


def mirror(directory: Path, files: dict[str, object] | None = None) -> Path:
    """A bare repository on disk with ``files`` committed on ``main``."""
    path = directory / "demo.git"
    commit_files(init_bare_repo(str(path)), files or FILES, message="first")  # type: ignore[arg-type]
    return path


def fetch_and_index(path: Path, name: str = "acme/demo") -> IndexJob:
    """Add the mirror as the API does and run its fetch and index stages; the job then waits for
    its embed stage (state ``storing``, storing timed)."""
    job = add_repository(str(path), "", name, False)
    assert run_fetch(job.pk), IndexJob.objects.get(pk=job.pk).error
    assert run_index(job.pk)
    return IndexJob.objects.select_related("repository").get(pk=job.pk)


def run_job(job: IndexJob) -> IndexJob:
    """Fetch, index and embed (the bundled local model) a queued job; return it finished."""
    assert run_fetch(job.pk), IndexJob.objects.get(pk=job.pk).error
    assert run_index(job.pk)
    run_embed(job.pk)
    return IndexJob.objects.select_related("repository").get(pk=job.pk)


def index(path: Path, name: str = "acme/demo") -> Repository:
    """Add the mirror as the API does and run every stage: a ready, searchable repository."""
    job = run_job(add_repository(str(path), "", name, False))
    assert job.state == "done", (job.state, job.error, job.failures)
    return job.repository


def reindex(repository: Repository) -> Repository:
    """An incremental re-index as the API queues it, run to the end."""
    job, created = reindex_repository(repository)
    assert created
    job = run_job(job)
    assert job.state == "done", (job.state, job.error, job.failures)
    return Repository.objects.get(pk=repository.pk)
