"""Which database a hybrid search reads (search/retrieval/replicas.py), on one host: a generation
swap records where the primary's log stood once it committed; a configured "replica" that is
not one, or that does not answer, is passed over with the reason in the answer, which is the
primary's; inside an open transaction the primary answers. (Real replicas on hosts of their
own: test_read_replicas_multi_host.py.)"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections, transaction

from indexing.models import Repository, SwapPosition
from reposearch.embedded_services import free_port
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.retrieval import replicas
from tests import factories
from tests.accounts_support import token_client
from tests.search.corpus import no_chat

pytestmark = pytest.mark.django_db(transaction=True)

FUNCTIONS = [
    "def acquire(pool):\n    return pool.pop()  # take a connection\n",
    "def retry(fn):\n    return fn()\n",
]


def search(query: str = "take a connection from the pool") -> SearchResult:
    return SearchExecutor(chat=no_chat()).run(SearchRequest(query=query, use_vector=False))


def wal_position() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
        return int(cursor.fetchone()[0])


@pytest.fixture
def indexed() -> Repository:
    """Stored and swapped in as an index run does (no job: nothing is queued for a worker)."""
    return factories.indexed_repository("acme/demo", FUNCTIONS, path="pool.py")


@pytest.fixture
def replica_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A database ``replica1``, made from a copy of the primary's settings to change: a
    connection of this thread (one the test's database guard allows), named as the replicas of
    ``REPO_SEARCH_READ_REPLICAS`` are."""
    monkeypatch.setattr(replicas, "_DOWN_UNTIL", {})
    monkeypatch.setattr(replicas, "replica_aliases", lambda: ["replica1"])
    config = copy.deepcopy(connections["default"].settings_dict)
    config["OPTIONS"].pop("pool", None)
    config["NAME"] = connections["default"].settings_dict["NAME"]  # the test database
    connections["replica1"] = type(connections["default"])(config, alias="replica1")
    try:
        yield config
    finally:
        connections["replica1"].close()
        del connections["replica1"]


def test_a_swap_records_where_the_log_stood_once_it_committed() -> None:
    before = wal_position()
    repository = factories.indexed_repository("acme/demo", FUNCTIONS, path="pool.py")
    recorded = SwapPosition.objects.get(repository=repository).lsn
    assert recorded is not None and before < recorded <= wal_position()

    quota = factories.functions_file(["def quota():\n    return 1\n"], path="quota.py")
    factories.index_generation(repository, [quota])
    again = SwapPosition.objects.get(repository=repository).lsn
    assert again is not None and recorded < again <= wal_position()


def test_without_replicas_every_search_reads_the_primary(indexed: Repository) -> None:
    result = search()
    assert [hit.file_path for hit in result.hits][:1] == ["pool.py"]
    assert result.served_by == {"database": "primary", "lag_bytes": 0, "skipped": {}}
    assert "read_from" not in result.stage("scope").detail  # type: ignore[union-attr]


def test_a_database_that_is_not_a_replica_is_never_read(
    indexed: Repository, replica_settings: dict[str, Any]
) -> None:
    """``replica1`` here is the primary itself: not in recovery, so it is not trusted as a copy
    (a promoted replica goes its own way)."""
    expected = [hit.chunk_id for hit in search().hits]
    result = search()
    assert [hit.chunk_id for hit in result.hits] == expected
    assert result.served_by["database"] == "primary"
    assert result.served_by["skipped"] == {"replica1": "not a replica (promoted?)"}
    assert result.stage("scope").detail["read_from"] == "primary"  # type: ignore[union-attr]


def test_a_replica_that_does_not_answer_is_passed_over_then_left_alone(
    indexed: Repository, replica_settings: dict[str, Any]
) -> None:
    replica_settings["PORT"] = str(free_port())  # nothing listens there
    expected = ["pool.py"]
    first = search()
    assert [hit.file_path for hit in first.hits][:1] == expected
    assert first.served_by["skipped"] == {"replica1": "does not answer"}
    second = search()  # within DOWN_SECS: not even asked
    assert [hit.file_path for hit in second.hits][:1] == expected
    assert second.served_by["skipped"] == {"replica1": "did not answer a moment ago"}
    assert second.served_by["database"] == "primary"


def test_inside_an_open_transaction_the_primary_answers(
    indexed: Repository, replica_settings: dict[str, Any]
) -> None:
    with transaction.atomic():
        result = search()
    assert [hit.file_path for hit in result.hits][:1] == ["pool.py"]
    assert result.served_by["skipped"] == {"replicas": "the caller's transaction is open"}


def test_health_reports_each_replica_without_requiring_it(
    indexed: Repository, replica_settings: dict[str, Any]
) -> None:
    body = token_client().get("/api/health").json()
    assert body["replicas"] == {"replica1": {"ok": False, "error": "not a replica (promoted?)"}}
    replica_settings["PORT"] = str(free_port())
    connections["replica1"].close()
    body = token_client().get("/api/health").json()
    assert body["database"]["ok"] and "replicas" not in body["down"]  # the primary answers
    [(name, status)] = body["replicas"].items()
    assert name == "replica1" and not status["ok"]
    assert status["error"].startswith("does not answer")
