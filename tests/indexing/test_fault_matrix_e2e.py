"""The fault matrix on a stack of this module's own (tests/fault_stack.py): the worker's main
process SIGKILLed at each stage of a job (fetch, index, store, swap, embed) and a new worker
started; its pool processes alone SIGKILLed mid-fetch, mid-swap and mid-embed of a re-index
(the task is redelivered); PostgreSQL restarted mid-store; Redis restarted while a job is
queued, with and without its append-only file. After each the job ends done with the rows of a
clean run of the same layout, nothing doubled, one clone directory per repository and nothing
else (no fetch staging directory either), and ``manage.py doctor`` finds no drift; while a part
is down ``/api/health`` names it.

A stage is stopped at a known point with a lock the test holds (nothing in the code knows about
tests): the index stage waits for ``indexing_chunk`` (discarding unfinished rows), the store for
a file row the test is inserting in an open transaction (the unique key), the swap for the
repository row. The fetch is held by a git server that answers after a pause.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from dulwich.repo import Repo

from reposearch.embedded_services import pid_alive, port_open
from tests.fault_stack import FaultStack, fault_stack
from tests.indexing.demo_repository import modules
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

MODULES = 200  # about 600 chunks: two store batches of 500
LAST_FILE = "pkg/module_99.py"  # the walk's last file (tree order): in the last store batch
QUICK = ["clean", "index", "store", "swap", "pg-store", "broker-lost", "broker-aof", "handover"]
QUICK += ["handover-aof", "embed", "pool-swap", "pool-embed"]
SLOW = ["fetch", "pool-fetch"]
# The modules' salt in the first commit and (for a re-index) the second; 0 by default. Only
# ``embed`` and ``pool-embed`` need contents of their own (an embed stage long enough to be
# caught); the other re-indexes change every module to contents an earlier case embedded (the
# embed case's, 5), so they borrow its vectors -- or embed them, run alone.
SALTS = {"embed": (5, 5), "pool-fetch": (0, 5), "pool-swap": (0, 5), "pool-embed": (21, 22)}


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Repo]:
    """The repositories by name: every one has the same layout; ``embed``'s and ``pool-embed``'s
    contents differ (no vectors to borrow from the others)."""
    root = tmp_path_factory.mktemp("git")
    repos = {}
    for name in [*QUICK, *SLOW]:
        repos[name] = init_bare_repo(str(root / f"{name}.git"))
        commit_files(repos[name], modules(MODULES, SALTS.get(name, (0, 0))[0]), message="modules")
    return repos


@pytest.fixture(scope="module")
def served(bare: dict[str, Repo]) -> Iterator[dict[str, str]]:
    """URLs by name; ``SLOW`` ones are served by a server that pauses before each answer."""
    quick = GitHttpServer({f"team/{name}.git": bare[name] for name in QUICK})
    slow = GitHttpServer({f"team/{name}.git": bare[name] for name in SLOW}, stall_s=3)
    with quick, slow:
        urls = {name: quick.url(f"team/{name}.git") for name in QUICK}
        yield urls | {name: slow.url(f"team/{name}.git") for name in SLOW}


@pytest.fixture(scope="module")
def recommit(bare: dict[str, Repo]) -> Any:
    """Commit every module changed (the second salt) on top of the repository's branch."""

    def commit_again(name: str) -> None:
        repo = bare[name]
        commit_files(repo, modules(MODULES, SALTS[name][1]), message="every module changed",
                     parent=repo.refs[b"refs/heads/main"])  # fmt: skip

    return commit_again


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, served: dict[str, str]) -> Iterator[FaultStack]:
    with fault_stack(tmp_path_factory.mktemp("stack")) as running:
        yield running


@pytest.fixture(scope="module")
def clean(stack: FaultStack, served: dict[str, str]) -> list[tuple[Any, ...]]:
    """The chunk rows of a run nothing disturbed."""
    job = stack.wait_until_finished(stack.add_repository(served["clean"]))
    assert job["state"] == "done", (job["error"], stack.log_tail())
    return _layout(stack, job["repository_id"])


def _layout(stack: FaultStack, repository_id: object) -> list[tuple[Any, ...]]:
    return stack.query(
        'SELECT path, "index", start_line, end_line, symbol FROM indexing_chunk'
        ' WHERE repository_id = %s ORDER BY path, "index"',
        repository_id,
    )


def _assert_like_a_clean_run(
    stack: FaultStack, job: dict[str, Any], clean: list[Any], generation: int = 1
) -> None:
    assert job["state"] == "done", (job["state"], job["error"], stack.log_tail())
    repository_id = job["repository_id"]
    assert _layout(stack, repository_id) == clean  # nothing lost, nothing written twice
    [(chunk_count, generations, files, vectors, distinct)] = stack.query(
        "SELECT r.chunk_count,"
        " (SELECT array_agg(DISTINCT generation) FROM indexing_chunk c WHERE c.repository_id = r.id),"
        " (SELECT count(*) FROM indexing_sourcefile f WHERE f.repository_id = r.id),"
        " (SELECT count(*) FROM indexing_chunkembedding e WHERE e.repository_id = r.id),"
        " (SELECT count(DISTINCT chunk_id) FROM indexing_chunkembedding e"
        "  WHERE e.repository_id = r.id)"
        " FROM indexing_repository r WHERE r.id = %s",
        repository_id,
    )
    assert chunk_count == len(clean) and generations == [generation] and files == MODULES
    assert vectors == distinct == chunk_count  # every chunk's vector once
    repositories = {str(row[0]) for row in stack.query("SELECT id FROM indexing_repository")}
    clones = stack.clone_dirs()
    assert str(repository_id) in clones
    assert clones <= repositories, clones - repositories  # no orphaned clone, no leftovers
    report = json.loads(stack.manage("doctor", "--json"))
    assert report["findings"] == [], report  # and the doctor agrees: no drift of any kind


def _queued(stack: FaultStack, url: str) -> tuple[int, str]:
    """A job added while no worker runs (it waits in the broker); its repository's id."""
    if stack.worker_alive():
        stack.kill_worker()
    job_id = stack.add_repository(url)
    return job_id, str(stack.job(job_id)["repository_id"])


def _kill_main_and_restart(stack: FaultStack) -> None:
    children = stack.kill_worker_main()
    assert children, "the worker had no pool processes"
    deadline = time.monotonic() + 20
    while any(pid_alive(pid) for pid in children):
        assert time.monotonic() < deadline, "pool processes outlived their main process"
        time.sleep(0.1)


# The held lock for each stage (none for embed: it runs long enough to be caught in the act).
HOLDS = {
    "index": ("LOCK TABLE indexing_chunk IN ACCESS EXCLUSIVE MODE", "walking", "indexing_chunk"),
    "store": (
        "INSERT INTO indexing_sourcefile (repository_id, generation, path, language, blob_sha,"
        " size_bytes, line_count, is_test, is_doc) VALUES (%s, %s, %s, '', '', 0, 0, false, false)",
        "storing",
        "INSERT INTO indexing_sourcefile",
    ),
    "swap": (
        "SELECT 1 FROM indexing_repository WHERE id = %s FOR KEY SHARE",
        "storing",
        'SELECT "indexing_repository"."id"',
    ),
}


def _params(stage: str, repository_id: str, generation: int = 1) -> tuple[Any, ...]:
    store = (repository_id, generation, LAST_FILE)
    return {"index": (), "store": store, "swap": (repository_id,)}[stage]


@contextmanager
def _stopped_at(
    stack: FaultStack, stage: str, job_id: int, repository_id: str, generation: int = 1
) -> Iterator[None]:
    """Start the worker on the queued job and hold the job at ``stage`` until the block ends."""
    if stage == "swap":  # the fetch updates the repository row: hold that only from the store on
        with ExitStack() as held:
            with stack.holding(HOLDS["store"][0], *_params("store", repository_id, generation)):
                stack.start_worker()
                stack.wait_blocked("INSERT INTO indexing_sourcefile")
                held.enter_context(stack.holding(HOLDS["swap"][0], repository_id))
            # The store is done; the swap's SELECT ... FOR UPDATE waits for the row (a plain
            # SELECT never waits; the statement's text is cut at 1 kB before "FOR UPDATE").
            stack.wait_blocked('SELECT "indexing_repository"."id"')
            assert stack.job(job_id)["state"] == "storing"
            yield
    elif stage in HOLDS:
        sql, state, blocked_on = HOLDS[stage]
        with stack.holding(sql, *_params(stage, repository_id, generation)):
            stack.start_worker()
            stack.wait_blocked(blocked_on)
            assert stack.job(job_id)["state"] == state
            if stage == "store":  # the first batch is in: a half-written generation
                assert stack.query("SELECT 1 FROM indexing_chunk WHERE repository_id = %s"
                                   " AND generation = %s", repository_id, generation)  # fmt: skip
            yield
    else:
        stack.start_worker()
        if stage == "fetch":  # mid-clone: the staging directory is there, the pack is not
            stack.wait_for(job_id, lambda j: j["state"] == "cloning", 120)
            deadline = time.monotonic() + 30
            staging = f"{repository_id}.fetch-"
            while not any(name.startswith(staging) for name in stack.clone_dirs()):
                assert time.monotonic() < deadline, stack.log_tail()
                time.sleep(0.05)
        else:
            stack.wait_for(
                job_id, lambda j: j["state"] == "embedding" and j["chunks_embedded"], 240
            )
        yield


@pytest.mark.parametrize("stage", ["fetch", "index", "store", "swap", "embed"])
def test_the_worker_killed_at_a_stage_leaves_a_job_a_new_worker_completes(
    stack: FaultStack, served: dict[str, str], clean: list[Any], stage: str
) -> None:
    job_id, repository_id = _queued(stack, served[stage])
    with _stopped_at(stack, stage, job_id, repository_id):
        _kill_main_and_restart(stack)
    assert stack.job(job_id)["state"] not in {"done", "failed"}
    assert stack.health() == (503, ["workers"])  # health says what is down while it is down
    stack.start_worker()  # nobody touches the job: the new worker finds it lost and resumes it

    job = stack.wait_until_finished(job_id)
    _assert_like_a_clean_run(stack, job, clean)
    assert job["resumes"] == 1, (job["resumes"], job["error"])


def _search(stack: FaultStack, repository_id: str, query: str) -> list[str]:
    """What a search for ``query`` in the repository answers now: the hits' contents."""
    code = (
        "import json, uuid\n"
        "from search.executor import SearchExecutor\n"
        "from search.types import SearchRequest\n"
        f"request = SearchRequest(query={query!r}, use_vector=False,"
        f" repo_ids=[uuid.UUID({repository_id!r})])\n"
        "print(json.dumps([hit.content for hit in SearchExecutor().run(request).hits]))"
    )
    return list(json.loads(stack.manage("shell", "-c", code).strip().splitlines()[-1]))


def _answers_from(stack: FaultStack, repository_id: str, salt: int) -> None:
    """Searches see the whole generation of the commit whose modules have ``salt``."""
    hits = _search(stack, repository_id, "function_42")
    assert sum("def function_42(" in hit for hit in hits) == 1, hits  # one copy, not two
    assert {m for hit in hits for m in re.findall(r"value \* 42 \+ (\d+)", hit)} == {str(salt)}
    [(count, live)] = stack.query(
        "SELECT chunk_count, (SELECT count(*) FROM indexing_chunk c WHERE c.repository_id = r.id"
        " AND c.generation = r.active_generation) FROM indexing_repository r WHERE id = %s",
        repository_id,
    )
    assert count == live > 0  # the live generation is complete: no half-written one shows


@pytest.mark.parametrize("stage", ["fetch", "swap", "embed"])
def test_pool_processes_killed_at_a_stage_of_a_reindex_leave_the_old_generation_live(
    stack: FaultStack, served: dict[str, str], clean: list[Any], recommit: Any, stage: str
) -> None:
    """SIGKILL of the pool processes alone: the worker's main process sees them lost and the
    broker hands the stage's task out again (``reject_on_worker_lost``). While the re-index is
    interrupted searches answer from the last complete generation; then it completes."""
    name = f"pool-{stage}"
    first, second = SALTS[name]
    job_id, repository_id = _queued(stack, served[name])
    stack.start_worker()
    assert stack.wait_until_finished(job_id)["state"] == "done", stack.log_tail()
    recommit(name)
    job_id = _reindex(stack, repository_id)

    live = second if stage == "embed" else first  # the embed stage follows the swap
    with _stopped_at(stack, stage, job_id, repository_id, generation=2):
        stack.kill_pool_children()
        assert stack.worker_alive(), stack.log_tail()
        assert stack.health() == (200, [])  # the worker answers: its pool is being replaced
        _answers_from(stack, repository_id, live)  # the interrupted run shows nothing of its own
    assert stack.job(job_id)["state"] not in {"done", "failed"}
    _answers_from(stack, repository_id, live)

    job = stack.wait_until_finished(job_id, seconds=360)
    _assert_like_a_clean_run(stack, job, clean, generation=2)
    _answers_from(stack, repository_id, second)
    assert job["resumes"] == 0, (job["resumes"], job["error"])  # redelivered, not found lost
    assert stack.worker_alive()


def _reindex(stack: FaultStack, repository_id: str) -> int:
    """A re-index queued while no worker runs; its job's id."""
    stack.kill_worker()
    code = (
        "from indexing.models import Repository\n"
        "from indexing.services.repositories import reindex_repository\n"
        f"print(reindex_repository(Repository.objects.get(pk={repository_id!r}))[0].pk)"
    )
    return int(stack.manage("shell", "-c", code).strip().splitlines()[-1])


def test_the_database_restarted_mid_store_delays_the_job_but_loses_nothing(
    stack: FaultStack, served: dict[str, str], clean: list[Any]
) -> None:
    job_id, repository_id = _queued(stack, served["pg-store"])
    sql = HOLDS["store"][0]
    with stack.holding(sql, *_params("store", repository_id)):
        stack.start_worker()
        stack.wait_blocked("INSERT INTO indexing_sourcefile")
        stack.postgres.stop()  # ends every session, the held one and the blocked store's
        assert not port_open(stack.postgres.port), "PostgreSQL did not stop"
    down_since = time.monotonic()
    assert stack.health() == (503, ["database"])
    time.sleep(max(0.0, 8 - (time.monotonic() - down_since)))  # an outage, not a blip
    stack.postgres.start()

    job = stack.wait_until_finished(job_id)
    _assert_like_a_clean_run(stack, job, clean)
    assert job["resumes"] == 0  # retried by its own task, not found lost
    assert stack.worker_alive()
    assert "waiting for the database" in stack.log_tail(500_000)


@pytest.mark.parametrize("persistent", [False, True], ids=["no-persistence", "append-only-file"])
def test_a_redis_restart_with_a_job_queued(
    stack: FaultStack, served: dict[str, str], clean: list[Any], persistent: bool
) -> None:
    """With its append-only file Redis keeps the queued task and the job runs as if nothing
    happened; without, the task is gone and the starting worker's census resumes the job."""
    if stack.worker_alive():
        stack.kill_worker()
    stack.redis.stop()
    stack.redis.persistent = persistent
    stack.redis.start()
    job_id, _ = _queued(stack, served["broker-aof" if persistent else "broker-lost"])
    time.sleep(2)  # appendfsync everysec: the task is on disk
    assert stack.redis.process is not None
    stack.redis.process.kill()  # a crash: no shutdown save
    stack.redis.process.wait(10)
    assert stack.health() == (503, ["broker", "workers"])
    stack.redis.start()
    stack.start_worker()

    job = stack.wait_until_finished(job_id)
    _assert_like_a_clean_run(stack, job, clean)
    assert job["resumes"] == (0 if persistent else 1), (job["resumes"], job["error"])


@pytest.mark.parametrize("persistent", [False, True], ids=["no-persistence", "append-only-file"])
def test_redis_down_for_30_s_as_a_stage_hands_over_to_the_next(
    stack: FaultStack, served: dict[str, str], clean: list[Any], persistent: bool
) -> None:
    """The index stage finishes while Redis is away: queueing the embed stage meets no broker.
    The worker stays up and the job still ends done once Redis is back."""
    if stack.worker_alive():
        stack.kill_worker()
    stack.redis.stop()
    stack.redis.persistent = persistent
    stack.redis.start()
    job_id, repository_id = _queued(stack, served["handover-aof" if persistent else "handover"])
    with stack.holding(HOLDS["store"][0], *_params("store", repository_id)):
        stack.start_worker()
        stack.wait_blocked("INSERT INTO indexing_sourcefile")
        stack.redis.stop()
    # Released: the store and the swap complete, then the hand-over to embed needs the broker.
    down_since = time.monotonic()
    live = "SELECT active_generation FROM indexing_repository WHERE id = %s"
    while stack.query(live, repository_id) != [(1,)]:
        assert time.monotonic() - down_since < 25, (stack.job(job_id), stack.log_tail())
        time.sleep(0.2)
    assert stack.health() == (503, ["broker", "workers"])
    time.sleep(max(0.0, 30 - (time.monotonic() - down_since)))
    stack.redis.start()

    job = stack.wait_until_finished(job_id)
    _assert_like_a_clean_run(stack, job, clean)
    assert stack.worker_alive(), stack.log_tail()
    log = stack.log_tail(500_000)
    assert f"job={job_id} broker unreachable, handing over to indexing.tasks.embed" in log
    assert "Unrecoverable error" not in log
    assert job["resumes"] == 0  # handed over once Redis was back, not found lost
