"""Workers on several hosts (tests/netns_lab.py: network namespaces joined by veth pairs): a
database host and two worker hosts index repositories together; one worker host is killed
outright mid-job, and in a second case cut off from the network. Its job is resumed on the other
host and completes, nothing is lost or written twice, and the rows equal a clean run's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.indexing.demo_repository import modules
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.netns_lab import FINISHED, NetnsLab, namespaces_refused, netns_lab

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

# Each repository is served twice: its twin is indexed afterwards, on a quiet lab, as the clean
# run whose rows the faulted run's must equal. Contents differ between repositories, so no
# embed stage can borrow another's vectors and finish at once.
SALTS = {"team/a.git": 1, "team/b.git": 2, "team/c.git": 3, "team/d.git": 4}


def _twin(name: str) -> str:
    return name.replace(".git", "-twin.git")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsLab]:
    refused = namespaces_refused()
    if refused:
        pytest.skip(f"network namespaces not permitted: {refused}")
    root = tmp_path_factory.mktemp("lab")
    served = {}
    for name, salt in SALTS.items():
        path = root / "git" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        commit_files(init_bare_repo(str(path)), modules(200, salt), message="modules")
        served[name] = served[_twin(name)] = path
    with netns_lab(root / "hosts", served) as running:
        for worker in running.workers:
            running.start_worker(worker)
        yield running


def _rows(lab: NetnsLab, repository_id: object) -> dict[str, Any]:
    [(chunk_count, embedded, vectors, distinct)] = lab.query(
        "SELECT r.chunk_count, r.embedded_count,"
        " (SELECT count(*) FROM indexing_chunkembedding e WHERE e.repository_id = r.id),"
        " (SELECT count(DISTINCT chunk_id) FROM indexing_chunkembedding e"
        "  WHERE e.repository_id = r.id)"
        " FROM indexing_repository r WHERE r.id = %s",
        repository_id,
    )
    chunks = lab.query(
        'SELECT path, "index", content_hash, generation FROM indexing_chunk'
        ' WHERE repository_id = %s ORDER BY path, "index"',
        repository_id,
    )
    return {
        "chunk_count": chunk_count, "embedded": embedded, "vectors": vectors,
        "distinct": distinct, "chunks": [row[:3] for row in chunks],
        "generations": {row[3] for row in chunks},
    }  # fmt: skip


def _on_w1_mid_embed(lab: NetnsLab, job_ids: list[int]) -> dict[str, Any]:
    """Wait for one of the jobs to be embedding on worker host w1 (some vectors written)."""
    found: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()

    def embedding_on_w1(job: dict[str, Any]) -> bool:
        host = lab.ran_on(job)
        seen.add((job["id"], job["state"], bool(job["chunks_embedded"]), host))
        if job["state"] == "embedding" and job["chunks_embedded"] and host == "w1":
            found.append(job)
        return job["state"] in FINISHED or bool(found)

    lab.wait_for(job_ids, lambda job: embedding_on_w1(job) or bool(found), 400)
    assert found, f"no job reached its embed stage on w1; seen: {sorted(seen, key=str)}"
    return found[0]


def _assert_complete_as_a_clean_run(lab: NetnsLab, jobs: list[dict[str, Any]]) -> None:
    """Every job done; each repository's rows equal those of its twin indexed now, cleanly."""
    for job in jobs:
        assert job["state"] == "done", (job["state"], job["error"])
    urls = dict(lab.query("SELECT id::text, url FROM indexing_repository"))
    twins = lab.add_repositories([_twin(urls[str(job["repository_id"])]) for job in jobs])
    for job, clean in zip(
        jobs, lab.wait_for(twins, lambda j: j["state"] in FINISHED, 300), strict=True
    ):
        assert clean["state"] == "done", (clean["state"], clean["error"])
        rows, reference = _rows(lab, job["repository_id"]), _rows(lab, clean["repository_id"])
        assert rows["chunks"] == reference["chunks"]  # nothing lost, nothing written twice
        assert rows["chunk_count"] == len(rows["chunks"]) > 0
        assert rows["generations"] == {1}  # one complete generation, nothing of a second run
        assert rows["vectors"] == rows["distinct"] == rows["embedded"] == rows["chunk_count"]
        assert set(job["stage_timings"]) >= {"cloning", "walking", "storing", "embedding"}
        assert job["attempts"] == 1  # fetched once: the fault came later and was not re-run


def test_a_worker_host_killed_mid_job_leaves_its_job_to_the_other_host(lab: NetnsLab) -> None:
    job_ids = lab.add_repositories([lab.git_url("team/a.git"), lab.git_url("team/b.git")])
    victim = _on_w1_mid_embed(lab, job_ids)

    killed = lab.workers["w1"].kill_everything()  # the host loses power: main process and pool
    assert killed >= 2 and lab.workers["w1"].pids() == []

    jobs = lab.wait_for(job_ids, lambda job: job["state"] in FINISHED, 600)
    faulted = next(job for job in jobs if job["id"] == victim["id"])
    other = next(job for job in jobs if job["id"] != victim["id"])
    assert faulted["resumes"] == 1 and other["resumes"] == 0
    assert lab.ran_on(faulted) == "w2"  # the embed stage was sent again and w2 finished it
    assert "resumed in indexing.tasks.embed.embed_repository" in lab.log_tail("w2", 500_000)
    _assert_complete_as_a_clean_run(lab, jobs)


def test_a_worker_host_cut_off_mid_job_leaves_its_job_to_the_other_host(lab: NetnsLab) -> None:
    if not lab.workers["w1"].pids():
        lab.start_worker("w1")  # the host killed in the test before comes back
    job_ids = lab.add_repositories([lab.git_url("team/c.git"), lab.git_url("team/d.git")])
    victim = _on_w1_mid_embed(lab, job_ids)
    stale_task = victim["celery_task_id"]

    lab.cut_link("w1")  # the host keeps running, with its task, but reaches nobody
    try:
        jobs = lab.wait_for(job_ids, lambda job: job["state"] in FINISHED, 600)
        faulted = next(job for job in jobs if job["id"] == victim["id"])
        assert lab.ran_on(faulted) == "w2" and faulted["resumes"] == 1
    finally:
        lab.restore_link("w1")
    # The cut-off host's run wakes up to a job another host finished: it stops and adds nothing.
    # It wakes up one of two ways: its database writes go through once the link is back (the run
    # ends on w1), or keepalives declared its idle connection dead during the cut and the run is
    # retried as a database outage (that retry, on either host, finds the job ended).
    assert lab.workers["w1"].pids(), "the cut-off host should still be running"

    def every_delivery_ended(_job: dict[str, Any]) -> bool:
        received, outcomes = lab.task_outcomes(stale_task)
        # Every delivery received (the first, a retry's, or the message handed back to the
        # broker when w1 reconnected) has ended, and one ended for good, not in a retry.
        final = [outcome for outcome in outcomes if "retry: " not in outcome]
        return received >= 1 and len(outcomes) == received and bool(final)

    try:
        lab.wait_for([victim["id"]], every_delivery_ended, 400)
    except AssertionError as error:
        raise AssertionError(f"{stale_task}: {lab.task_outcomes(stale_task)}\n{error}") from None
    jobs = [lab.job(job_id) for job_id in job_ids]
    assert next(job for job in jobs if job["id"] == victim["id"])["resumes"] == 1
    _assert_complete_as_a_clean_run(lab, jobs)
