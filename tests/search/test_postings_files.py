"""Posting lists in the host's pack files (``search.retrieval.postings_files``): two real
processes searching one repository map the same pack, read once from the database; a rebuilt or
re-indexed generation gets new packs and the old ones go; packs of several searches are merged;
a truncated or corrupt pack, or one corrupt list in a pack, is refused and read again, never
ranked; a directory that cannot be written falls back to each process's memory. Every answer is
checked against ranking every match."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from accounts.visibility import Viewer
from search.executor import SearchRequest
from search.retrieval import postings_cache, postings_files, postings_pack
from search.retrieval.fulltext import FulltextList, fulltext_search
from search.retrieval.postings_cache import HotLists
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from tests.search.corpus import Piece, SourceDoc, index_generation, indexed_repository

SEARCH_IN_A_PROCESS = """
import json, os, sys
import django
django.setup()
from accounts.visibility import Viewer
from search.executor import SearchRequest
from search.retrieval.fulltext import fulltext_search
from search.retrieval.query import parse_query
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
query = sys.argv[1]
scope = build_scope_filter(resolve_scope(SearchRequest(query=query)),
                           scope_repositories(None, Viewer.everything()))
found = fulltext_search(parse_query(query), scope, limit=6, cap=10**6)
root = os.environ["REPO_SEARCH_POSTINGS_DIR"]
with open("/proc/self/maps") as maps:
    mapped = sorted({int(line.split()[4]) for line in maps if root in line})
print(json.dumps({"ranked": found.ranked, "loaded": found.detail["lists_loaded"],
                  "fallback": found.detail.get("fallback"), "mapped": mapped}))
"""


def chunk(path: str, symbol: str, body: str) -> SourceDoc:
    return SourceDoc(path, [Piece(f"def {symbol}():\n    {body}\n", symbol)])


DOCS = [
    chunk("auth/a.py", "open_it", "session = open_session(user) or refresh(session)"),
    chunk("auth/b.py", "expire", "if session.expired: return refresh(session, user)"),
    chunk("auth/c.py", "tokens", "refresh_token(user, token, expires) refresh refresh"),
    chunk("auth/d.py", "plain", "return token"),
]


def fulltext(query: str, *, use_postings: bool = True, repo: Any = None) -> FulltextList:
    scope = build_scope_filter(
        resolve_scope(SearchRequest(query=query)),
        scope_repositories([repo] if repo else None, Viewer.everything()),
    )
    return fulltext_search(parse_query(query), scope, limit=6, cap=10**6, use_postings=use_postings)


def exact(found: FulltextList, query: str) -> None:
    """``found`` ranks as every match does (``ts_rank_cd``'s float4: ``rel=1e-5``)."""
    every = fulltext(query, use_postings=False)
    assert "fallback" not in found.detail and found.ranked
    assert [c for c, _ in found.ranked] == [c for c, _ in every.ranked]
    assert [s for _, s in found.ranked] == pytest.approx([s for _, s in every.ranked], rel=1e-5)


def packs(root: Path) -> list[Path]:
    return sorted(root.glob(f"*/*/*{postings_files.SUFFIX}"))


def lists_in(pack: Path) -> int:
    return int(postings_pack.HEADER.unpack_from(pack.read_bytes(), 0)[2])


def generation_dirs(root: Path) -> list[str]:
    return sorted(f"{d.parent.name}/{d.name}" for d in root.glob("*/*") if d.is_dir())


def forget() -> None:
    """This process keeps no list: no pack mapped, none in its memory."""
    postings_cache.forget()


@pytest.fixture
def files(settings: Any, tmp_path: Path) -> Path:
    """The files in a directory of the test's own; nothing mapped by this process yet."""
    root = tmp_path / "postings"
    settings.REPO_SEARCH_POSTINGS_DIR = str(root)
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    forget()
    return root


@pytest.mark.django_db(transaction=True)  # the processes read what this one committed
def test_two_processes_map_the_same_pack_read_once_from_the_database(files: Path) -> None:
    many = [chunk(f"gen/m{i}.py", f"fn_{i}", f"session value_{i}") for i in range(600)]
    indexed_repository("shared", [*DOCS, *many])
    query = "session refresh"
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reposearch.settings.test",
        "DATABASE_URL": f"postgresql://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}"
        f":{db['PORT'] or 5432}/{db['NAME']}",
        "REPO_SEARCH_POSTINGS_DIR": str(files),
    }
    command = [sys.executable, "-c", SEARCH_IN_A_PROCESS, query]
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    started = [subprocess.Popen(command, env=env, **pipes) for _ in range(2)]
    answers = []
    for process in started:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    terms = len(parse_query(query).terms)
    # one process read the lists and wrote them (the other, waiting for the lock or after it,
    # mapped them): one build on this host
    assert sorted(a["loaded"] for a in answers) == [0, terms]
    (pack,) = packs(files)  # both lists in one pack, the one mapping of each process
    assert lists_in(pack) == terms
    assert answers[0]["mapped"] == answers[1]["mapped"] == [pack.stat().st_ino]
    every = fulltext(query, use_postings=False)
    for answer in answers:
        assert answer["fallback"] is None
        assert [c for c, _ in answer["ranked"]] == [c for c, _ in every.ranked]


@pytest.mark.django_db
def test_a_rebuilt_or_reindexed_generation_gets_new_files_and_the_old_go(files: Path) -> None:
    from indexing.models import Chunk
    from indexing.services.search_stats import refresh_search_stats

    repository = indexed_repository("rebuilt", DOCS)
    exact(fulltext("session refresh"), "session refresh")
    first = generation_dirs(files)
    assert len(first) == 1 and [lists_in(p) for p in packs(files)] == [2]

    plain = Chunk.objects.get(repository=repository, symbol="plain")
    with connection.cursor() as cursor:  # the same generation's text changes, and is rebuilt
        cursor.execute(
            "UPDATE indexing_chunk SET search_vector = to_tsvector('simple', 'session session"
            " session refresh') WHERE id = %s",
            [plain.pk],
        )
    refresh_search_stats(repository.pk)
    found = fulltext("session refresh")
    assert found.detail["lists_loaded"] == 2 and found.ranked[0][0] == plain.pk  # not stale
    exact(found, "session refresh")
    second = generation_dirs(files)
    assert len(second) == 1 and second != first  # the old build's directory is gone

    index_generation(repository, [*DOCS, chunk("auth/e.py", "later", "refresh session")])
    exact(fulltext("session refresh"), "session refresh")
    third = generation_dirs(files)
    assert len(third) == 1 and third != second


@pytest.mark.django_db
def test_packs_of_several_searches_are_merged_and_answer_exactly(files: Path) -> None:
    indexed_repository("merged", DOCS)
    queries = ["session", "refresh", "user", "token", "expires", "open_session", "expired"]
    for query in queries:
        exact(fulltext(query), query)
    on_disk = packs(files)
    assert len(on_disk) <= postings_files.MAX_PACKS  # the newest merged as they come
    terms = {term for query in queries for term in parse_query(query).terms}
    assert sum(lists_in(p) for p in on_disk) == len(terms)  # each list once
    forget()  # as another process: every list served by the packs
    for query in queries:
        again = fulltext(query)
        assert again.detail["lists_loaded"] == 0
        exact(again, query)


@pytest.mark.django_db
def test_a_truncated_pack_is_refused_read_again_never_ranked(files: Path, caplog: Any) -> None:
    indexed_repository("truncated", DOCS)
    query = "session refresh"
    exact(fulltext(query), query)
    (pack,) = packs(files)
    pack.write_bytes(pack.read_bytes()[:-8])  # its last record lost
    forget()  # as a process that has not mapped it yet
    with caplog.at_level(logging.WARNING, logger="search.retrieval.postings_files"):
        found = fulltext(query)
    assert found.detail["lists_loaded"] == 2  # both read again from the database
    exact(found, query)
    assert any("refused" in r.getMessage() for r in caplog.records)
    assert [lists_in(p) for p in packs(files)] == [2]  # the refused pack replaced
    forget()
    again = fulltext(query)
    assert again.detail["lists_loaded"] == 0 and again.ranked == found.ranked


@pytest.mark.django_db
def test_a_corrupt_list_in_a_pack_is_refused_read_again_never_ranked(
    files: Path, caplog: Any, monkeypatch: Any
) -> None:
    indexed_repository("corrupt", DOCS)
    query = "session refresh"
    exact(fulltext(query), query)
    (pack,) = packs(files)
    data = bytearray(pack.read_bytes())
    data[-1] ^= 0x7F  # the last list's last term frequency: another score if it were ranked
    pack.write_bytes(bytes(data))
    forget()
    with caplog.at_level(logging.WARNING, logger="search.retrieval.postings_files"):
        found = fulltext(query)
    assert found.detail["lists_loaded"] == 1  # that list read again; the other served whole
    exact(found, query)
    assert sum("refused" in r.getMessage() for r in caplog.records) == 1
    forget()
    again = fulltext(query)  # the newer pack's whole list wins over the refused one
    assert again.detail["lists_loaded"] == 0 and again.ranked == found.ranked
    exact(again, query)
    monkeypatch.setattr(postings_files, "MAX_PACKS", 1)  # the next write merges every pack
    exact(fulltext("user"), "user")
    (merged,) = packs(files)
    assert lists_in(merged) == 3  # session, refresh (the whole one), user: the refused one gone
    forget()
    assert fulltext(query).detail["lists_loaded"] == 0


@pytest.mark.django_db
def test_a_directory_that_cannot_be_written_falls_back_to_memory(
    settings: Any, tmp_path: Path, caplog: Any
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings.REPO_SEARCH_POSTINGS_DIR = str(blocker / "postings")  # cannot be created
    settings.REPO_SEARCH_POSTINGS_MEMORY_MB = 64
    forget()
    postings_files._warned.clear()
    indexed_repository("unwritable", DOCS)
    with caplog.at_level(logging.WARNING, logger="search.retrieval.postings_files"):
        found = fulltext("session refresh")
    exact(found, "session refresh")
    assert found.detail["lists_loaded"] == 2
    assert any("not writable" in r.getMessage() for r in caplog.records)
    again = fulltext("session refresh")  # kept in this process's memory, as before files
    assert again.detail["lists_loaded"] == 0 and again.ranked == found.ranked
    assert len(postings_cache.cache()) == 2 and not (blocker / "postings").exists()


@pytest.mark.django_db
def test_a_damaged_index_entry_is_refused_read_again_never_ranked(files: Path) -> None:
    indexed_repository("entry", DOCS)
    query = "session refresh"
    exact(fulltext(query), query)
    (pack,) = packs(files)
    data = bytearray(pack.read_bytes())
    count = lists_in(pack)
    base_at = postings_pack.HEADER.size + 8 * count + 16  # the first entry's base
    data[base_at] ^= 0x01  # another first chunk id: other chunks if it were ranked
    pack.write_bytes(bytes(data))
    forget()
    found = fulltext(query)
    assert found.detail["lists_loaded"] == 1  # that list read again; the other served whole
    exact(found, query)


@pytest.mark.django_db
def test_a_process_maps_each_pack_once_and_keeps_few_lists_at_hand(
    files: Path, monkeypatch: Any
) -> None:
    indexed_repository("one-a", DOCS)
    indexed_repository("one-b", [*DOCS[1:], chunk("b.py", "only_b", "refresh session token")])
    # at hand: two lists of the last search
    monkeypatch.setattr(postings_cache, "_HOT", HotLists(2))
    queries = ["session refresh", "user token", "refresh token expires", "session"]
    for query in queries:
        exact(fulltext(query), query)
    assert len(postings_cache._HOT) == 2
    with open("/proc/self/maps") as maps:
        mapped = [
            line.split()[5] for line in maps if str(files) in line and "(deleted)" not in line
        ]
    assert sorted(mapped) == [str(p) for p in packs(files)]  # one mapping per pack, none per list
    for query in queries:  # the others served from the packs' indexes, none read again
        again = fulltext(query)
        assert again.detail["lists_loaded"] == 0
        exact(again, query)


def pack_mappings(root: Path) -> list[str]:
    """This process's mappings of files under ``root`` (a deleted one too), one per mapping."""
    with open("/proc/self/maps") as maps:
        return [" ".join(line.split()[5:]) for line in maps if str(root) in line]


@pytest.mark.django_db
def test_many_searches_over_one_generation_keep_only_its_packs_mapped(files: Path) -> None:
    words = [f"word{i}" for i in range(40)]
    many = [chunk(f"w/m{i}.py", f"fn_{i}", " ".join(words[i : i + 3])) for i in range(38)]
    indexed_repository("many", [*DOCS, *many])
    for word in words:  # each search writes a pack, and the newest are merged into it
        exact(fulltext(word), word)
    assert len(packs(files)) <= postings_files.MAX_PACKS
    # the lists at hand are views of the packs still there: none keeps a merged one mapped
    assert sorted(pack_mappings(files)) == [str(p) for p in packs(files)]
    for word in words:
        assert fulltext(word).detail["lists_loaded"] == 0
    assert sorted(pack_mappings(files)) == [str(p) for p in packs(files)]


@pytest.mark.django_db
def test_a_swapped_or_swept_generation_is_unmapped(files: Path, monkeypatch: Any) -> None:
    import shutil

    repository = indexed_repository("swapped", DOCS)
    other = indexed_repository("other", [chunk("o.py", "other_fn", "session token")])
    exact(fulltext("session refresh"), "session refresh")
    before = pack_mappings(files)
    assert len(before) == 2 and sorted(before) == [str(p) for p in packs(files)]
    index_generation(repository, [*DOCS, chunk("auth/e.py", "later", "refresh session")])
    exact(fulltext("session refresh"), "session refresh")  # the new generation; the old swept
    after = pack_mappings(files)
    assert sorted(after) == [str(p) for p in packs(files)] and len(after) == 2
    assert not set(before) & set(after) - {p for p in after if str(other.pk) in p}

    # another process sweeps the other repository's generation (retired, say): this one lets go
    # of its packs within RELIST_SECONDS, without a search of that repository
    (gone,) = [p for p in packs(files) if str(other.pk) in str(p)]
    shutil.rmtree(gone.parent)
    monkeypatch.setattr(postings_files, "RELIST_SECONDS", 0.0)
    assert fulltext("refresh", repo=repository.pk).ranked  # that repository only
    assert sorted(pack_mappings(files)) == [str(p) for p in packs(files)]
    assert not [m for m in pack_mappings(files) if str(other.pk) in m]


@pytest.mark.django_db
def test_a_deleted_repositorys_files_go_without_a_new_generation(
    files: Path, monkeypatch: Any
) -> None:
    kept = indexed_repository("kept", DOCS)
    deleted = indexed_repository("deleted", [chunk("d.py", "gone_fn", "session refresh")])
    exact(fulltext("session refresh"), "session refresh")
    gone = str(deleted.pk)
    assert any(gone in d for d in generation_dirs(files))
    deleted.delete()  # no generation is made anywhere: only the periodic sweep sees it
    monkeypatch.setattr(postings_cache, "SWEEP_SECONDS", 0.0)
    assert fulltext("session", repo=kept.pk).ranked
    assert not any(gone in d for d in generation_dirs(files))
    assert not [m for m in pack_mappings(files) if gone in m]
    assert any(str(kept.pk) in d for d in generation_dirs(files))
