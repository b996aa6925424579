"""English stems in the full-text index: a question's inflections meet the code's words, exact
identifiers still rank first, and rows stored before the stems field can be rebuilt in place."""

from __future__ import annotations

import pytest
from django.db import connection

from indexing.identifiers import identifier_words, stem, stem_text
from indexing.services.storing import rebuild_search_vectors
from search.pipeline import SearchExecutor, SearchRequest, SearchResult
from search.stats import refresh_search_stats
from tests.search.corpus import Piece, SourceDoc, indexed_repository, no_chat


def search(query: str) -> SearchResult:
    return SearchExecutor(chat=no_chat()).run(SearchRequest(query=query, use_vector=False))


def test_inflections_share_a_stem_and_identifiers_keep_their_whole_form() -> None:
    assert {stem(w) for w in ("allocate", "allocations", "allocated", "allocating")} == {"alloc"}
    assert stem_text("def parse_headers(self): configured sessions") == (
        "pars header configur session"
    )
    # stems=True looks words up by their stem and keeps the compound identifier exact.
    assert identifier_words("parseHttpHeaders", stems=True) == [
        "pars",
        "http",
        "header",
        "parsehttpheaders",
    ]
    # Tokens that are not plain lowercase words are left alone.
    assert stem("utf8") == "utf8" and stem("été") == "été"


@pytest.mark.django_db
def test_a_question_in_other_inflections_finds_the_code() -> None:
    indexed_repository(
        "stems",
        [
            SourceDoc(
                "pool/arena.py",
                [
                    Piece(
                        "def reuse_buffer(arena):\n"
                        "    # Reusing buffers avoids allocating a new one per request.\n"
                        "    return arena.pop()\n",
                        "reuse_buffer",
                    )
                ],
            ),
            SourceDoc(
                "web/views.py",
                [Piece("def render(template):\n    return template.render()\n", "render")],
            ),
        ],
    )
    result = search("how are allocations avoided by reuse of buffer objects")
    assert result.hits and result.hits[0].symbol == "reuse_buffer"


@pytest.mark.django_db
def test_the_exact_identifier_still_ranks_first() -> None:
    indexed_repository(
        "stems-exact",
        [
            SourceDoc(
                "a.py",
                [Piece("def parse_headers(raw):\n    return raw.split()\n", "parse_headers")],
            ),
            SourceDoc(
                "b.py",
                [Piece("def parsing_header(raw):\n    return raw.strip()\n", "parsing_header")],
            ),
        ],
    )
    assert search("parse_headers").hits[0].symbol == "parse_headers"
    assert search("parsing_header").hits[0].symbol == "parsing_header"


@pytest.mark.django_db
def test_rows_stored_without_stems_are_found_after_the_rebuild() -> None:
    repository = indexed_repository(
        "stems-rebuild",
        [
            SourceDoc(
                "cfg/loader.py",
                [Piece("def load(path):\n    # read the configuration file\n", "load")],
            )
        ],
    )
    # What an install indexed before the stems field has: symbol, path and body only.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE indexing_chunk SET search_vector ="
            " setweight(to_tsvector('simple', 'load'), 'A')"
            " || setweight(to_tsvector('simple', 'cfg loader py'), 'B')"
            " || setweight(to_tsvector('simple', 'def load path read the configuration file'), 'D')"
            " WHERE repository_id = %s",
            [repository.pk],
        )
    refresh_search_stats(repository.pk)
    assert not search("where is it configured").hits
    assert rebuild_search_vectors(repository.pk) == 1
    refresh_search_stats(repository.pk)
    assert [hit.symbol for hit in search("where is it configured").hits] == ["load"]
