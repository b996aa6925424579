"""Search reads served by PostgreSQL streaming replicas, across hosts (tests/replica_lab.py: a
primary host, two replica hosts, two web hosts and a worker host in network namespaces).

Searches spread over the replicas and answer what the primary holds; a replica that has not
replayed a repository's latest generation swap is skipped for searches of that repository (and
only those); a replica killed under 50 clients costs no search; with replicas on, the primary
does a small fraction of the work per search it does without them."""

from __future__ import annotations

import collections
import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dulwich.repo import Repo

from tests.indexing.git_server import commit_files, init_bare_repo
from tests.netns_lab import FINISHED, namespaces_refused
from tests.replica_lab import WEB_PORT, ReplicaLab, replica_lab

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

ALPHA = {
    f"alpha/module_{n}.py": f"def alpha_{n}(value):\n    return value * {n}\n" for n in range(20)
}
# Big enough that a search's reading outweighs its scope statement (what stays on the primary).
BETA = {
    f"beta/module_{n}.py": f"def beta_{n}(value):\n    return value + {n}\n" for n in range(300)
}
FRESH = "alpha/fresh.py"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaLab]:
    refused = namespaces_refused()
    if refused:
        pytest.skip(f"network namespaces not permitted: {refused}")
    root = tmp_path_factory.mktemp("replicas")
    served = {}
    for name, files in (("team/alpha.git", ALPHA), ("team/beta.git", BETA)):
        path = root / "git" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        commit_files(init_bare_repo(str(path)), files, message="modules")
        served[name] = path
    with replica_lab(root / "hosts", served) as running:
        running.start_worker("w1")
        ids = running.add_repositories([running.git_url(name) for name in served])
        jobs = running.wait_for(ids, lambda job: job["state"] in FINISHED, 600)
        assert [job["state"] for job in jobs] == ["done", "done"], jobs
        running.wait_replayed()
        running.urls = [running.start_web("web1"), running.start_web("web2")]
        yield running


def _databases(answers: list[dict[str, Any]]) -> collections.Counter[str]:
    return collections.Counter(answer.get("database") or "none" for answer in answers)


def _all_found(answers: list[dict[str, Any]], path: str) -> None:
    bad = [a for a in answers if a["status"] != 200 or not a["paths"] or a["paths"][0] != path]
    assert not bad, bad[:5]


def test_searches_spread_over_the_replicas_and_answer_what_the_primary_holds(
    lab: ReplicaLab,
) -> None:
    answers = lab.search(lab.urls, clients=4, count=40, query="alpha_7 value")
    _all_found(answers, "alpha/module_7.py")
    served = _databases(answers)
    assert served["replica1"] >= 10 and served["replica2"] >= 10, served
    assert served["primary"] == 0, served  # both replicas had replayed every swap
    assert all(a["lag_bytes"] >= 0 for a in answers)
    exact = lab.search(lab.urls, clients=2, count=8, query='"def alpha_7("')  # exact mode
    _all_found(exact, "alpha/module_7.py")
    assert set(_databases(exact)) == {"replica1", "replica2"}, _databases(exact)


def test_a_replica_behind_a_swap_is_skipped_for_that_repository_only(lab: ReplicaLab) -> None:
    lagging = lab.replicas["r2"]
    with lagging.operator() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    try:
        path = lab.root.parent / "git" / "team" / "alpha.git"
        repository = Repo(str(path))
        fresh = {**ALPHA, FRESH: "def freshly_swapped_marker():\n    return 'new'\n"}
        commit_files(repository, fresh, message="fresh", parent=repository.refs[b"refs/heads/main"])
        [alpha_id] = [row[0] for row in lab.query(
            "SELECT id FROM indexing_repository WHERE url LIKE %s", "%alpha.git"
        )]  # fmt: skip
        code = (
            "from indexing.models import Repository\n"
            "from indexing.services.repositories import reindex_repository\n"
            f"print(reindex_repository(Repository.objects.get(pk='{alpha_id}'))[0].pk)"
        )
        job_id = int(lab.manage("shell", "-c", code).split()[-1])
        [job] = lab.wait_for([job_id], lambda j: j["state"] in FINISHED, 600)
        assert job["state"] == "done", job

        answers = lab.search(lab.urls, clients=2, count=16, query="freshly_swapped_marker")
        _all_found(answers, FRESH)  # the new generation, wherever it was read
        assert "replica2" not in _databases(answers)
        # The replicas take turns being asked first: when it was the paused one's turn, it was
        # found behind and passed over.
        reasons = [a["skipped"].get("replica2", "") for a in answers]
        assert sum(reason.startswith("behind: ") for reason in reasons) >= 4, answers[:3]

        # The other repository's last swap is old: the paused replica still serves it.
        others = lab.search(lab.urls, clients=2, count=16, query="repo:beta beta_3 value")
        _all_found(others, "beta/module_3.py")
        assert _databases(others)["replica2"] >= 4, _databases(others)
    finally:
        with lagging.operator() as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
    lab.wait_replayed()
    answers = lab.search(lab.urls, clients=2, count=16, query="freshly_swapped_marker")
    _all_found(answers, FRESH)
    assert _databases(answers)["replica2"] >= 4, _databases(answers)


def test_the_primary_does_a_fraction_of_the_work_per_search_with_replicas_on(
    lab: ReplicaLab,
) -> None:
    without = lab.start_web("web2", port=WEB_PORT + 1, replicas=False)
    lab.quiet_primary()  # nothing but searches uses it while it is measured
    work: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    counted: dict[str, list[int]] = {"on": [], "off": []}
    # One-identifier queries new to every web process: each answer also counts the exact matches
    # of the identifier, in 11 to 320 files here, read where an exact search would be.
    identifiers = iter(["value", "beta_1", "return", "beta_2", "def", "beta"])
    for _round in range(3):  # interleaved
        fresh = [next(identifiers), next(identifiers)]
        for setting, urls in (("on", lab.urls), ("off", [without])):
            lab.search(urls, clients=2, count=4, query="beta_11 value")  # pools and caches warm
            time.sleep(1.5)  # sessions report their counters when idle for a moment
            before, cpu_before = lab.primary_work(), lab.primary_cpu_seconds()
            answers = lab.search(urls, clients=2, count=60, query="beta_11 value")
            time.sleep(1.5)
            after, cpu_after = lab.primary_work(), lab.primary_cpu_seconds()
            _all_found(answers, "beta/module_11.py")
            work[setting].append((after["blocks"] - before["blocks"]) / len(answers))
            cpu[setting].append(1000 * (cpu_after - cpu_before) / len(answers))
            scans = lab.primary_chunk_scans()
            found = [lab.search(urls, count=1, query=identifier)[0] for identifier in fresh]
            time.sleep(1.5)
            assert all(a["status"] == 200 and a["exact_matches"] >= 11 for a in found), found
            counted[setting].append(lab.primary_chunk_scans() - scans)
    print("primary blocks per search, replicas on / off:", work)
    print("primary CPU ms per search, replicas on / off:", cpu)
    print("primary scans of chunks and files per two identifier searches, on / off:", counted)
    assert statistics.median(work["on"]) < 0.25 * statistics.median(work["off"]), work
    # with replicas on, neither the search nor its count reads code on the primary (the median
    # round: on a loaded machine a replica that errs is left alone for a while, and that
    # round's reads fall back to the primary, as they must; before the count was routed, every
    # round read ~670 scans there)
    assert statistics.median(counted["on"]) == 0 and min(counted["off"]) > 0, counted


def test_a_replica_cut_off_under_load_costs_no_search(lab: ReplicaLab) -> None:
    """Its cable pulled: nothing is refused, packets go nowhere. Statements on it fail within
    seconds (TCP user timeout), and the searches go to the other replica."""
    load = lab.clients(lab.urls, clients=20, seconds=20, query="alpha_5 value")
    time.sleep(6)
    lab.cut_link("r2")
    try:
        out, err = load.communicate(timeout=600)
    finally:
        lab.restore_link("r2")
    assert load.returncode == 0, err[-3000:]
    answers = json.loads(out)["answers"]
    _all_found(answers, "alpha/module_5.py")
    late = [a for a in answers if a["sent"] > 8]  # sent once it was cut (about 6 s in)
    assert late and "replica2" not in _databases(late), _databases(late)
    assert _databases(late)["replica1"] > 0, _databases(late)
    # Back on the network, it serves again once its pause is over.
    deadline = time.monotonic() + 60
    while "replica2" not in _databases(lab.search(lab.urls, clients=2, count=8, query="alpha_5")):
        assert time.monotonic() < deadline, "replica2 did not come back"
        time.sleep(2)


def test_a_replica_killed_under_fifty_clients_costs_no_search(lab: ReplicaLab) -> None:
    load = lab.clients(lab.urls, clients=50, seconds=25, query="alpha_3 value")
    time.sleep(8)
    assert lab.hosts["r1"].kill_everything() >= 1  # the replica host loses power
    out, err = load.communicate(timeout=600)
    assert load.returncode == 0, err[-3000:]
    answers = json.loads(out)["answers"]
    _all_found(answers, "alpha/module_3.py")  # every search answered, and right
    served = _databases(answers)
    assert served["replica1"] > 0 and served["replica2"] > 0, served
    # Searches sent once the replica was gone (the clients started about 8 s before the kill,
    # counting from their own start) were not answered by it.
    late = [a for a in answers if a["sent"] > 10.5]
    assert late and "replica1" not in _databases(late), _databases(late)
