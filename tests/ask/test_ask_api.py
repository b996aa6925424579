"""POST /api/ask against a real indexed repository and the test model server."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest

from indexing.models import Chunk
from tests.accounts_support import token_client

pytestmark = pytest.mark.django_db

SNIPPET_LABEL = re.compile(r"^\[(\d+)\] (\S+) -- symbol (\S+)", re.M)


def numbered(messages: list[dict[str, Any]]) -> dict[str, int]:
    """symbol -> snippet number, read from the prompt the model received."""
    prompt = messages[-1]["content"]
    return {symbol: int(n) for n, _, symbol in SNIPPET_LABEL.findall(prompt)}


def ask(**body: Any) -> Any:
    return token_client().post("/api/ask", body, format="json")


def test_citations_resolve_from_chunk_metadata_and_invented_ones_are_removed(
    shop, chat_model, admin_client
):
    def answer(messages: list[dict[str, Any]]) -> str:
        n = numbered(messages)
        return (
            f"The pool is configured by configure_pool [{n['configure_pool']}], which reads the"
            f" size [{n['read_pool_size']}, {n['configure_pool']}] (see src/pool.py:999) [42]."
        )

    chat_model.chat_handler = answer
    response = ask(question="where is the connection pool configured?")
    assert response.status_code == 200, response.content
    body = response.json()
    chunk = Chunk.objects.get(symbol="configure_pool")
    first = body["sources"][0]
    assert (first["path"], first["start_line"], first["end_line"]) == (
        chunk.path,
        chunk.start_line,
        chunk.end_line,
    )
    assert first["location"] == f"acme/shop:src/pool.py:{chunk.start_line}-{chunk.end_line}"
    assert first["commit"] == shop.last_indexed_commit
    assert first["branch"] == shop.branch
    assert datetime.fromisoformat(first["indexed_at"]) == shop.last_indexed_at
    assert first["permalink"] == (
        f"https://github.com/acme/shop/blob/{shop.last_indexed_commit}/src/pool.py"
        f"#L{chunk.start_line}-L{chunk.end_line}"
    )
    assert first["app_url"] == (  # the permalink search results use, not the old redirect
        f"/repos/acme/shop/-/blob/{shop.last_indexed_commit}/src/pool.py"
        f"#L{chunk.start_line}-L{chunk.end_line}"
    )
    opened = admin_client.get(first["app_url"].split("#")[0])
    assert opened.status_code == 200 and "configure_pool" in opened.content.decode()
    assert [s["symbol"] for s in body["sources"]] == ["configure_pool", "read_pool_size"], body
    assert [s["number"] for s in body["sources"]] == [1, 2]
    # Only the cited snippets are sources; every snippet given is listed with "cited".
    assert len(body["snippets"]) > len(body["sources"])
    assert sum(s["cited"] for s in body["snippets"]) == 2
    text = body["answer"]["text"]
    assert text.startswith(
        "The pool is configured by configure_pool [1], which reads the size [2][1]"
    )
    assert "[42]" not in text and "999" not in text
    assert "[42]" in body["answer"]["raw"]
    assert f"[[1]]({first['permalink']})" in body["answer"]["markdown"]
    assert any("[42]" in w for w in body["warnings"])
    assert any("src/pool.py:999" in w for w in body["warnings"])
    assert [t["name"] for t in body["trace"]][-1] == "answer"
    assert {"retrieve_ms", "model_ms", "total_ms"} <= set(body["timings"])
    # The model saw paths and symbols but no line numbers.
    prompt = chat_model.requests_to("/api/chat")[-1].body["messages"][-1]["content"]
    assert f"{chunk.start_line}-{chunk.end_line}" not in prompt


def test_no_chat_model_is_a_503_with_the_retrieved_sources(shop, chat_model):
    chat_model.stop()
    response = ask(question="where is the connection pool configured?")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "model_unavailable"
    assert "chat model" in error["message"]
    sources = error["details"]["sources"]
    assert sources and all(s["location"].startswith("acme/shop:") for s in sources)
    assert sources[0]["location"].startswith("acme/shop:src/pool.py:")
    assert "answer" not in response.json()


def test_a_chat_model_that_is_not_configured_is_a_503_too(shop, chat_model, settings):
    settings.LLM_PROVIDER = "none"
    import llm

    llm.config.invalidate()
    response = ask(question="how is the retry delay computed?")
    assert response.status_code == 503
    assert response.json()["error"]["details"]["sources"]


def test_a_garbage_answer_is_a_502_with_the_sources(shop, chat_model):
    chat_model.fail_next("garbage", path="/api/chat")
    response = ask(question="how is the retry delay computed?")
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "model_bad_response"
    assert error["details"]["sources"]


def test_an_empty_answer_is_a_502(shop, chat_model):
    chat_model.queue_chat("   ")
    response = ask(question="how is the retry delay computed?")
    assert response.status_code == 502
    assert "empty" in response.json()["error"]["message"]


def test_a_model_slower_than_the_ask_timeout_is_a_503(shop, chat_model, settings):
    settings.REPO_SEARCH_ASK_TIMEOUT_SECS = 0.5
    chat_model.fail_next("slow", path="/api/chat", delay=3)
    response = ask(question="how is the retry delay computed?")
    assert response.status_code == 503
    assert response.json()["error"]["details"]["sources"]


def test_a_server_error_from_the_model_is_a_clear_error(shop, chat_model):
    chat_model.fail_next("500", path="/api/chat", times=5)
    response = ask(question="how is the retry delay computed?")
    assert response.status_code in (502, 503)
    assert response.json()["error"]["code"] in ("model_unavailable", "model_bad_response")


def test_an_answer_that_cites_nothing_has_no_sources_and_says_so(shop, chat_model):
    chat_model.queue_chat("The snippets do not say.")
    body = ask(question="how is the retry delay computed?").json()
    assert body["answered"] is True
    assert body["sources"] == []
    assert any("cites none" in w for w in body["warnings"])


def test_ask_takes_repository_names_as_search_does(shop, chat_model):
    """``repos`` and ``repo_ids`` take names as ``POST /api/search``'s do (issue 29 item 3); an
    unknown name is a 404 naming the nearest the account may see."""
    chat_model.stop()  # a 503 still lists what was retrieved, from the named repository
    for body in ({"repos": ["acme/shop"]}, {"repo_ids": ["acme/shop"]}):
        response = ask(question="where is the connection pool configured?", **body)
        assert response.status_code == 503, response.content
        sources = response.json()["error"]["details"]["sources"]
        assert sources and all(s["location"].startswith("acme/shop:") for s in sources)
    response = ask(question="where is the pool configured?", repos=["acme/shpo"])
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "unknown_repository" and error["details"]["repos"] == ["acme/shpo"]
    assert error["details"]["suggestions"] == {"acme/shpo": ["acme/shop"]}
    assert "did you mean acme/shop?" in error["message"]


def test_with_nothing_indexed_the_model_is_not_asked(db, chat_model):
    body = ask(question="where is the pool configured?").json()
    assert body["answered"] is False and body["sources"] == []
    assert chat_model.requests_to("/api/chat") == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({}, 400),
        ({"question": ""}, 400),
        ({"question": "   "}, 400),
        ({"question": 42}, 400),
        ({"question": ["a"]}, 400),
        ({"question": "x" * 2001}, 413),
        ({"question": "pool", "k": 0}, 400),
        ({"question": "pool", "k": 21}, 400),
        ({"question": "pool", "k": "5"}, 400),
        ({"question": "pool", "expand": "yes"}, 400),
        ({"question": "pool", "hyde": 1}, 400),
        ({"question": "pool", "expand_depth": 9}, 400),
        ({"question": "pool", "repo_ids": "abc"}, 400),
        ({"question": "pool", "repo_ids": ["no-such-repository"]}, 404),  # names, as search's
        ({"question": "pool", "repos": ["no-such-repository"]}, 404),
        ({"question": "pool", "repos": "abc"}, 400),
        ({"question": "pool", "include_test": True}, 400),
        ({"question": "pool", "repo_ids": ["00000000-0000-0000-0000-000000000001"]}, 404),
    ],
)
def test_bad_input_is_a_clear_4xx(db, body, status):
    response = ask(**body)
    assert response.status_code == status, response.content
    assert set(response.json()["error"]) == {"code", "message", "details"}


def test_the_name_a_search_api_gives_the_question_points_to_question(db):
    response = ask(query="how is the pool sized")
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(
        "unknown fields: query (did you mean question?); the fields:"
    )


@pytest.mark.parametrize("payload", ['{"question": ', "[1, 2]", '"pool"', "null"])
def test_malformed_or_non_object_json_is_a_400(db, payload):
    response = token_client().post("/api/ask", payload, content_type="application/json")
    assert response.status_code == 400, response.content


def test_ask_is_in_the_openapi_schema(db) -> None:
    response = token_client().get("/api/schema", HTTP_ACCEPT="application/json")
    operation = response.json()["paths"]["/api/ask"]["post"]
    assert {"200", "400", "404", "413", "502", "503"} <= set(operation["responses"])
