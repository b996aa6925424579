"""Questions about docs or tests get those first; usage questions search the docs too.

These are the hand-set rules; with learned fusion on (the default) they are features of the
model instead of guarantees (``tests/search/test_learned_fusion.py``), so they are tested here
with it off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.executor import SearchExecutor, SearchRequest
from search.ranking.fusion import FusedCandidate
from search.ranking.ordering import apply_signals
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.query import identifier_query, usage_question
from search.retrieval.scope import resolve_scope
from search.types import SearchTuning
from tests.search.corpus import Piece, SourceDoc, indexed_repository

CODE = (
    "def load_config_from_env(prefix):\n"
    '    """Load configuration values from environment variables with a prefix."""\n'
    "    config = {}\n"
    "    for name, value in environ.items():\n"
    "        if name.startswith(prefix):\n"
    "            config[name] = value  # environment variables configuration\n"
    "    return config\n"
)
DOC = (
    "## Settings\n\n"
    "You can also set options through the environment: every variable that starts\n"
    "with the prefix is read when the app starts.\n"
)
INSTALL = "## Install\n\nInstall it with pip:\n\n    pip install confkit\n"
TEST = (
    "def test_prefixed_environment():\n"
    "    monkeypatch.setenv('APP_DEBUG', '1')\n"
    "    assert load_config_from_env('APP_') == {'APP_DEBUG': '1'}\n"
)


@pytest.fixture(autouse=True)
def _rules_only(settings: Any) -> None:
    settings.REPO_SEARCH_LEARNED_FUSION = False


@pytest.fixture
def repository():  # type: ignore[no-untyped-def]
    return indexed_repository(
        "confkit",
        [
            SourceDoc("confkit/env.py", [Piece(CODE, "load_config_from_env")]),
            SourceDoc(
                "README.md",
                [Piece(INSTALL, "", "section"), Piece(DOC, "", "section")],
                language="markdown",
                is_doc=True,
            ),
            SourceDoc(
                "tests/test_env.py",
                [Piece(TEST, "test_prefixed_environment")],
                is_test=True,
            ),
        ],
    )


def search(client: Client, **body: Any) -> dict[str, Any]:
    body.setdefault("use_vector", False)
    response = client.post("/api/search", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def paths(body: dict[str, Any]) -> list[str]:
    return [hit["file_path"] for hit in body["results"]]


@pytest.mark.django_db
def test_a_docs_question_gets_the_doc_page_first(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    query = "docs on configuration from environment variables with a prefix"
    # Fusion alone ranks the code first: it shares more words with the question.
    plain = SearchExecutor().run(
        SearchRequest(query=query, use_vector=False, tuning=SearchTuning(intent_boost=0.0))
    )
    assert [h.file_path for h in plain.hits][:2] == ["confkit/env.py", "README.md"]

    body = search(client, query=query)
    assert paths(body)[0] == "README.md"
    assert "confkit/env.py" in paths(body)  # still there, after the docs
    scope = next(s for s in body["trace"] if s["name"] == "scope")
    assert scope["detail"]["prefer_docs"] is True and scope["detail"]["prefer_tests"] is False


@pytest.mark.django_db
def test_a_tests_question_gets_the_test_first(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    body = search(client, query="tests for load_config_from_env with a prefix")
    assert paths(body)[0] == "tests/test_env.py"
    assert paths(body)[1] == "confkit/env.py"


@pytest.mark.django_db
def test_explicit_include_only_includes(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    body = search(
        client,
        query="load configuration from environment variables with a prefix",
        include_docs=True,
        include_tests=True,
    )
    assert paths(body)[0] == "confkit/env.py"
    assert {"README.md", "tests/test_env.py"} <= set(paths(body))


@pytest.mark.django_db
def test_a_usage_question_searches_the_docs(client: Client, repository) -> None:  # type: ignore[no-untyped-def]
    body = search(client, query="how do I install it with pip")
    assert body["scope"]["include_docs"] is True
    assert body["scope"]["docs_reason"] == "usage question ('i')"
    hit = body["results"][0]
    assert hit["file_path"] == "README.md" and "pip install confkit" in hit["content"]
    # Not a usage question: the docs stay out.
    body = search(client, query="install with pip")
    assert "README.md" not in paths(body)
    assert body["scope"]["docs_reason"] == "left out by default"


@pytest.mark.parametrize(
    ("query", "usage"),
    [
        ("how do I shut the server down", "i"),
        ("How to register a custom converter?", "how to"),
        ("can we change my error page", "we"),
        ("where is the pool configured", None),
        ("how is i/o buffered", None),
        ("why does it redirect", None),
    ],
)
def test_usage_question(query: str, usage: str | None) -> None:
    assert usage_question(query) == usage


@pytest.mark.parametrize(
    ("query", "prefer_tests", "prefer_docs"),
    [
        ("tests for the retry helper", True, False),
        ("readme section about testing handlers", True, True),
        ("where are docstrings parsed", False, False),  # included, not preferred
        ("how do I install it", False, False),  # usage: docs included, not preferred
    ],
)
def test_preference_follows_the_question_words(
    query: str, prefer_tests: bool, prefer_docs: bool
) -> None:
    scope = resolve_scope(SearchRequest(query=query))
    assert (scope.prefer_tests, scope.prefer_docs) == (prefer_tests, prefer_docs)
    assert (
        resolve_scope(SearchRequest(query="where is retry", include_docs=True)).prefer_docs is False
    )


def _candidates(*scores: float) -> list[FusedCandidate]:
    return [FusedCandidate(i, s, best_rank=i) for i, s in enumerate(scores, start=1)]


def test_intent_puts_the_intended_kind_first_in_fusion_order() -> None:
    facts = {
        1: ChunkFacts("r/a.py", False, False),
        2: ChunkFacts("r/b.md", False, True),
        3: ChunkFacts("r/c.py", False, False),
        4: ChunkFacts("r/d.md", False, True),
    }
    ordered, touched = apply_signals(
        _candidates(0.10, 0.08, 0.07, 0.01), facts, prefer_docs=True, intent_boost=1.0
    )
    assert [c.chunk_id for c in ordered] == [2, 4, 1, 3]
    assert [c.rank for c in ordered] == [1, 2, 3, 4] and touched["intended"] == 2
    unchanged, _ = apply_signals(_candidates(0.10, 0.08, 0.07, 0.01), facts, intent_boost=1.0)
    assert [c.chunk_id for c in unchanged] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("take_while_m_n", "take_while_m_n"),
        ("ScriptInfo.load_app", "scriptinfo.load_app"),
        ("Needed::Size", "needed.size"),
        ("`from_pyfile()`", "from_pyfile"),
        ("where is take_while_m_n", None),
        ("tests for parse", None),
    ],
)
def test_identifier_query(query: str, name: str | None) -> None:
    assert identifier_query(query) == name


BODY = "".join(f"    step_{i} = raw.strip()  # plain work\n" for i in range(40))


@pytest.mark.django_db
def test_a_name_query_gets_its_definition_first(client: Client) -> None:
    indexed_repository(
        "names",
        [
            SourceDoc(
                "hdr.py",
                [
                    Piece("def parse_header(raw):\n" + BODY + "    return raw\n", "parse_header"),
                    Piece(
                        "def parse_header_line(raw):\n    return parse_header(raw)\n",
                        "parse_header_line",
                    ),
                    Piece(
                        "def read_all(lines):\n"
                        "    first = parse_header(lines[0])\n"
                        "    return [parse_header(line) for line in lines] + [first]\n",
                        "read_all",
                    ),
                ],
            )
        ],
    )
    plain = SearchExecutor().run(
        SearchRequest(
            query="parse_header", use_vector=False, tuning=SearchTuning(exact_symbol_boost=0.0)
        )
    )
    assert plain.hits[0].symbol != "parse_header"  # the long definition loses on BM25 alone
    body = search(client, query="parse_header")
    assert body["results"][0]["symbol"] == "parse_header"
    fusion = next(s for s in body["trace"] if s["name"] == "fusion")
    assert fusion["detail"]["signals"]["exact_name"] == 1
