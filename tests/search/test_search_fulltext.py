"""Full-text search on real PostgreSQL: BM25, identifiers, phrases, caps, scope, generations."""

from __future__ import annotations

import pytest

from indexing.services.storing import discard_unfinished_generations
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.types import SearchTuning
from tests.search.corpus import Piece, SourceDoc, index_generation, indexed_repository, no_chat

pytestmark = pytest.mark.django_db


def search(query: str, **options: object) -> SearchResult:
    request = SearchRequest(query=query, use_vector=False, **options)  # type: ignore[arg-type]
    return SearchExecutor(chat=no_chat()).run(request)


def symbols(result: SearchResult) -> list[str]:
    return [hit.symbol for hit in result.hits]


def fillers(count: int, text: str, prefix: str = "filler") -> list[SourceDoc]:
    return [
        SourceDoc(
            f"{prefix}/mod{i}.py", [Piece(f"def {prefix}_{i}():\n    {text}\n", f"{prefix}_{i}")]
        )
        for i in range(count)
    ]


def test_one_rare_term_outranks_many_copies_of_a_common_one() -> None:
    docs = fillers(30, "buffer = read(buffer)")
    docs.append(
        SourceDoc("io/frob.py", [Piece("def frob(x):\n    return frobnicate(x)\n", "frob")])
    )
    docs.append(
        SourceDoc(
            "io/buffers.py",
            [
                Piece(
                    "def fill(buffer):\n    buffer.extend(buffer)\n    return buffer, buffer, buffer\n",
                    "fill",
                )
            ],
        )
    )
    indexed_repository("bm25", docs)
    bm25 = search("frobnicate buffer")
    # One "frobnicate" (in one chunk of 32) beats six "buffer"s (in 31): a term's weight is its
    # inverse document frequency, not only how often it occurs.
    assert symbols(bm25)[:2] == ["frob", "fill"]
    assert bm25.trace[2].name == "fulltext" and bm25.trace[2].detail["ranking"] == "bm25"
    assert bm25.hits[0].bm25_score is not None and bm25.hits[0].vector_score is None


@pytest.mark.parametrize(
    "query", ["parseHttpHeader", "parse_http_header", "parse http header", "ParseHTTPHeader"]
)
def test_identifier_spellings_meet(query: str) -> None:
    indexed_repository(
        "identifiers",
        [
            SourceDoc(
                "http/headers.py",
                [
                    Piece(
                        "def parse_http_header(raw):\n    return raw.split(':')\n",
                        "parse_http_header",
                    )
                ],
            ),
            SourceDoc(
                "js/net.js",
                [Piece("function parseHttpHeader(raw) { return raw }", "parseHttpHeader")],
                language="javascript",
            ),
            SourceDoc("misc/other.py", [Piece("def unrelated():\n    return 42\n", "unrelated")]),
        ],
    )
    result = search(query)
    assert set(symbols(result)[:2]) == {"parse_http_header", "parseHttpHeader"}
    assert "unrelated" not in symbols(result)


def test_exact_identifier_outranks_the_same_words_in_prose() -> None:
    indexed_repository(
        "exact",
        [
            SourceDoc(
                "a.py",
                [
                    Piece(
                        "def read_config(path):\n    # parse the http header first\n    pass\n",
                        "read_config",
                    )
                ],
            ),
            SourceDoc(
                "b.py", [Piece("def handle(raw):\n    return parseHttpHeader(raw)\n", "handle")]
            ),
        ],
    )
    assert symbols(search("parseHttpHeader"))[0] == "handle"


def test_quoted_phrase_requires_the_words_in_order() -> None:
    indexed_repository(
        "phrase",
        [
            SourceDoc(
                "a.py",
                [Piece("def retry():\n    # exponential backoff between attempts\n", "retry")],
            ),
            SourceDoc(
                "b.py",
                [Piece("def backoff():\n    # backoff that is not exponential\n", "backoff")],
            ),
        ],
    )
    assert set(symbols(search("exponential backoff"))) == {"retry", "backoff"}
    assert symbols(search('"exponential backoff"')) == ["retry"]


def test_or_semantics_with_all_terms_first() -> None:
    docs = fillers(10, "pass")
    docs += [
        SourceDoc("a.py", [Piece("def one():\n    alpha()\n", "one")]),
        SourceDoc("b.py", [Piece("def both():\n    alpha(beta)\n", "both")]),
        SourceDoc("c.py", [Piece("def two():\n    beta()\n", "two")]),
    ]
    indexed_repository("or", docs)
    found = symbols(search("alpha beta"))
    assert found[0] == "both"
    assert set(found) == {"one", "both", "two"}


def test_broad_queries_rank_a_capped_candidate_set() -> None:
    docs = fillers(80, "widget = widget + 1")
    docs.append(SourceDoc("rare.py", [Piece("def rare():\n    widget(gizmo)\n", "rare")]))
    indexed_repository("cap", docs)
    result = search("widget gizmo", tuning=SearchTuning(fulltext_candidates=10))
    assert symbols(result)[0] == "rare"
    detail = result.stage("fulltext").detail["queries"][0]  # type: ignore[union-attr]
    assert detail["capped"] is True
    broad = search("widget", tuning=SearchTuning(fulltext_candidates=10), limit=100)
    assert 0 < broad.total_bm25_hits <= 20  # two tiers of at most 10 rows, never all 81


def test_tests_and_docs_are_scoped() -> None:
    indexed_repository(
        "scope",
        [
            SourceDoc(
                "src/pool.py", [Piece("def make_pool():\n    return Pool(size)\n", "make_pool")]
            ),
            SourceDoc(
                "tests/test_pool.py",
                [Piece("def test_pool():\n    assert Pool(size)\n", "test_pool")],
                is_test=True,
            ),
            SourceDoc(
                "docs/pool.md",
                [Piece("# Pool\nThe Pool size is configurable.", "", "section")],
                language="markdown",
                is_doc=True,
            ),
        ],
    )
    assert symbols(search("pool size")) == ["make_pool"]
    about_tests = search("pool size test")
    assert "test_pool" in symbols(about_tests)
    assert about_tests.scope.include_tests and not about_tests.scope.include_docs
    about_docs = search("pool size documentation")
    assert any(hit.file_path == "docs/pool.md" for hit in about_docs.hits)
    explicit = search("pool size test", include_tests=False)
    assert "test_pool" not in symbols(explicit)


def test_repository_language_and_path_filters() -> None:
    first = indexed_repository(
        "first",
        [
            SourceDoc(
                "src/core/engine.py", [Piece("def engine_start():\n    pass\n", "engine_start")]
            ),
            SourceDoc(
                "lib/engine.go", [Piece("func EngineStart() {}", "EngineStart")], language="go"
            ),
        ],
    )
    indexed_repository(
        "second",
        [SourceDoc("engine.py", [Piece("def engine_start():\n    pass\n", "engine_start")])],
    )
    assert len(search("engine start").hits) == 3
    assert {h.repo_id for h in search("engine start", repo_ids=[first.pk]).hits} == {first.pk}
    assert symbols(search("engine start", languages=["go"])) == ["EngineStart"]
    assert [h.file_path for h in search("engine start", path_globs=["src/**/*.py"]).hits] == [
        "src/core/engine.py"
    ]
    assert len(search("engine start", path_globs=["*.py"]).hits) == 2


def test_an_unfinished_generation_is_never_returned() -> None:
    repository = indexed_repository(
        "gens", [SourceDoc("a.py", [Piece("def oldname():\n    pass\n", "oldname")])]
    )
    index_generation(
        repository,
        [SourceDoc("a.py", [Piece("def newname():\n    pass\n", "newname")])],
        swap=False,
    )
    assert search("newname").hits == []
    hits = search("oldname").hits
    assert [h.symbol for h in hits] == ["oldname"] and hits[0].commit == "commit1"
    repository.refresh_from_db()
    discard_unfinished_generations(repository)  # what the next index run does first
    index_generation(
        repository, [SourceDoc("a.py", [Piece("def newest():\n    pass\n", "newest")])]
    )
    assert search("oldname").hits == []
    assert symbols(search("newest")) == ["newest"]


def test_repositories_not_ready_are_not_searched() -> None:
    repository = indexed_repository(
        "failing", [SourceDoc("a.py", [Piece("def kept():\n    pass\n", "kept")])]
    )
    type(repository).objects.filter(pk=repository.pk).update(status="failed")
    assert search("kept").hits == []


def test_missing_statistics_are_counted_on_the_fly() -> None:
    docs = fillers(10, "buffer = 1")
    docs.append(SourceDoc("frob.py", [Piece("def frob():\n    frobnicate(buffer)\n", "frob")]))
    with_stats = indexed_repository("stats", docs)
    without = indexed_repository("nostats", docs, stats=False)
    a = search("frobnicate buffer", repo_ids=[with_stats.pk])
    b = search("frobnicate buffer", repo_ids=[without.pk])
    assert [h.bm25_score for h in a.hits] == pytest.approx([h.bm25_score for h in b.hits])
    assert "stats_computed_on_the_fly" in b.stage("fulltext").detail["queries"][0]  # type: ignore[union-attr]


def test_a_query_with_no_words_returns_nothing_quietly() -> None:
    indexed_repository("empty", [SourceDoc("a.py", [Piece("def f():\n    pass\n", "f")])])
    result = search("?? !!")
    assert result.hits == []
    assert result.stage("fulltext").status == "ran"  # type: ignore[union-attr]
