"""POST /api/ask as server-sent events, served by uvicorn (the real ASGI app) over a committed
indexed repository, the answer streamed from the wire-protocol test server -- and its failures.
Also the prompt sized to the model's context window and the per-process call limit."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import llm.config
from indexing.clone_paths import repository_dir
from indexing.models import Chunk, Repository
from tests.accounts_support import bearer, make_account, token_client, token_for
from tests.asgi_server import serving_the_site
from tests.ask.corpus import build_repository
from tests.ask.test_ask_api import numbered
from tests.model_server import ModelServer, wait_until

QUESTION = "where is the connection pool configured?"
EVENTS = {"Accept": "text/event-stream"}


@pytest.fixture
def committed_shop(transactional_db: Any, settings: Any, tmp_path: Any) -> Iterator[Repository]:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = build_repository()
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


@pytest.fixture
def site(
    committed_shop: Repository, chat_model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    with serving_the_site(monkeypatch) as base:
        yield base


@pytest.fixture
def headers(committed_shop: Repository) -> dict[str, str]:
    return {**EVENTS, **bearer(token_for(make_account("read")))}


def read_events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) as the server sends them; comments (keep-alives) skipped."""
    name, data = "", []
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and name:
            yield name, json.loads("\n".join(data))
            name, data = "", []


def stream_ask(site: str, headers: dict[str, str], **body: Any) -> list[tuple[str, Any]]:
    with httpx.stream(
        "POST", f"{site}/api/ask", json={"question": QUESTION, **body}, headers=headers, timeout=30
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(read_events(response))


def test_sources_come_first_then_the_answer_as_written_then_verified_citations(
    site: str, headers: dict[str, str], chat_model: ModelServer
) -> None:
    sources_seen = threading.Event()
    model_waited_for_sources: list[bool] = []

    def answer(messages: list[dict[str, Any]]) -> str:
        # The model does not start before the client holds the sources.
        model_waited_for_sources.append(sources_seen.wait(10))
        n = numbered(messages)
        return (
            f"configure_pool [{n['configure_pool']}] reads the size [{n['read_pool_size']}] [42]."
        )

    chat_model.chat_handler = answer
    events: list[tuple[str, Any]] = []
    with httpx.stream(
        "POST", f"{site}/api/ask", json={"question": QUESTION}, headers=headers, timeout=30
    ) as response:
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-cache"
        for name, data in read_events(response):
            events.append((name, data))
            if name == "sources":
                sources_seen.set()
    assert model_waited_for_sources == [True]
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done"
    assert set(names[1:-1]) == {"delta"} and len(names) > 4  # the answer came in pieces
    sources = events[0][1]
    assert sources["question"] == QUESTION
    given = {s["symbol"]: s["context_number"] for s in sources["snippets"]}
    assert {"configure_pool", "read_pool_size"} <= set(given)
    raw = "".join(data["text"] for name, data in events if name == "delta")
    assert f"[{given['configure_pool']}]" in raw and "[42]" in raw  # as the model wrote it
    done = events[-1][1]
    assert done["answered"] and done["answer"]["raw"] == raw
    assert done["answer"]["text"] == "configure_pool [1] reads the size [2]."
    chunk = Chunk.objects.get(symbol="configure_pool")
    first = done["sources"][0]
    assert (first["path"], first["start_line"], first["end_line"]) == (
        chunk.path,
        chunk.start_line,
        chunk.end_line,
    )
    assert any("[42]" in w for w in done["warnings"])
    stages = {t["name"]: t for t in done["trace"]}
    assert stages["fulltext"]["status"] == "ran" and stages["answer"]["status"] == "ran"
    assert stages["answer"]["detail"]["streamed"] is True
    assert {"retrieve_ms", "first_token_ms", "model_ms", "total_ms"} <= set(done["timings"])
    assert chat_model.requests_to("/api/chat")[-1].body["stream"] is True


def test_stream_true_in_the_body_streams_without_the_accept_header(
    site: str, chat_model: ModelServer
) -> None:
    chat_model.queue_chat("It is configured in configure_pool [1].")
    plain = {**bearer(token_for(make_account("read"))), "Accept": "application/json"}
    events = stream_ask(site, plain, stream=True)
    assert events[0][0] == "sources" and events[-1][0] == "done"
    assert events[-1][1]["answer"]["text"] == "It is configured in configure_pool [1]."


@pytest.mark.parametrize(
    ("failure", "code", "after"),
    [
        ({"kind": "cut", "after": 3}, "model_unavailable", 3),
        ({"kind": "malformed", "after": 2}, "model_bad_response", 2),
        ({"kind": "stream_error", "after": 1}, "model_bad_response", 1),
        ({"kind": "500", "times": 5}, "model_unavailable", 0),
    ],
)
def test_a_model_failure_ends_the_stream_with_an_error_event_and_the_sources(
    site: str,
    headers: dict[str, str],
    chat_model: ModelServer,
    failure: dict[str, Any],
    code: str,
    after: int,
) -> None:
    chat_model.queue_chat("The pool is configured in configure_pool [1].")
    chat_model.fail_next(failure.pop("kind"), **failure)
    events = stream_ask(site, headers)
    names = [name for name, _ in events]
    assert names == ["sources", *["delta"] * after, "error"]  # and the connection closed
    error = events[-1][1]["error"]
    assert error["code"] == code and error["message"]
    assert {s["symbol"] for s in error["details"]["sources"]} >= {"configure_pool"}
    answer_stage = next(t for t in error["details"]["trace"] if t["name"] == "answer")
    assert answer_stage["status"] == "failed"
    partial = "".join(data["text"] for name, data in events if name == "delta")
    assert error["details"].get("partial_answer", "") == partial


def test_no_model_server_is_an_error_event_after_the_sources(
    site: str, headers: dict[str, str], chat_model: ModelServer
) -> None:
    chat_model.stop()
    events = stream_ask(site, headers)
    assert [n for n, _ in events] == ["sources", "error"]
    assert events[-1][1]["error"]["code"] == "model_unavailable"


def test_refusals_before_the_stream_are_json_with_their_status(
    site: str, headers: dict[str, str], settings: Any
) -> None:
    url = f"{site}/api/ask"
    unknown = "00000000-0000-0000-0000-000000000001"
    cases = [
        ({"question": QUESTION, "repo_ids": [unknown]}, headers, 404, "unknown_repository"),
        ({"question": QUESTION, "k": 0}, headers, 400, None),
        ({"question": QUESTION}, EVENTS, 401, None),
    ]
    for body, sent, status, code in cases:
        response = httpx.post(url, json=body, headers=sent, timeout=30)
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/json")
        error = response.json()["error"]
        assert error["message"] and (code is None or error["code"] == code)
    settings.REPO_SEARCH_THROTTLE_ASK = "1/min"  # the same ask throttle as the JSON answer
    limited = {**EVENTS, **bearer(token_for(make_account("read")))}
    assert httpx.post(url, json={"question": QUESTION, "k": 0}, headers=limited).status_code == 400
    throttled = httpx.post(url, json={"question": QUESTION}, headers=limited, timeout=30)
    assert throttled.status_code == 429 and throttled.json()["error"]["code"] == "throttled"


def test_a_client_that_disconnects_stops_the_request_to_the_model(
    site: str, headers: dict[str, str], chat_model: ModelServer
) -> None:
    long_answer = "The pool is configured in configure_pool [1]. " * 20
    chat_model.queue_chat(long_answer)
    chat_model.drip = 0.02
    deltas = 0
    with httpx.stream(
        "POST", f"{site}/api/ask", json={"question": QUESTION}, headers=headers, timeout=30
    ) as response:
        for name, _ in read_events(response):
            deltas += name == "delta"
            if deltas == 3:
                break  # leaving the block closes the connection
    assert wait_until(lambda: chat_model.abandoned_streams == 1, timeout=10)
    assert chat_model.pieces_sent < len(long_answer) // chat_model.piece_chars


def test_a_burst_beyond_the_call_limit_gets_503_model_busy_with_the_sources(
    site: str, headers: dict[str, str], chat_model: ModelServer, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENT_CALLS = 1
    settings.LLM_QUEUE_WAIT_SECS = 0.2
    release = threading.Event()
    chat_model.chat_handler = lambda messages: (release.wait(20), "configure_pool [1].")[1]
    finished: list[list[str]] = []

    def first_ask() -> None:
        finished.append([name for name, _ in stream_ask(site, headers)])

    holder = threading.Thread(target=first_ask)
    holder.start()
    try:
        assert wait_until(lambda: chat_model.in_flight == 1, timeout=20)
        busy = httpx.post(
            f"{site}/api/ask",
            json={"question": QUESTION},
            headers={**headers, "Accept": "application/json"},
            timeout=30,
        )
    finally:
        release.set()
        holder.join(30)
    assert busy.status_code == 503, busy.text
    error = busy.json()["error"]
    assert error["code"] == "model_busy" and "LLM_MAX_CONCURRENT_CALLS" in error["message"]
    assert error["details"]["sources"]
    assert finished and finished[0][-1] == "done"  # the first ask was not disturbed
    assert chat_model.max_in_flight == 1


@pytest.mark.django_db
def test_the_prompt_keeps_whole_snippets_that_fit_the_context_window(
    shop: Repository, chat_model: ModelServer, settings: Any
) -> None:
    seen: list[dict[str, int]] = []

    def answer(messages: list[dict[str, Any]]) -> str:
        seen.append(numbered(messages))
        return "See [1]."

    chat_model.chat_handler = answer
    ask = {"question": QUESTION, "k": 8}
    wide = token_client().post("/api/ask", ask, format="json").json()
    settings.LLM_CONTEXT_TOKENS = 500
    llm.config.invalidate()
    narrow = token_client().post("/api/ask", ask, format="json").json()
    wide_stage = next(t for t in wide["trace"] if t["name"] == "answer")["detail"]
    stage = next(t for t in narrow["trace"] if t["name"] == "answer")["detail"]
    assert wide_stage["snippets_left_out"] == 0 and wide_stage["context_tokens"] == 8192
    assert stage["context_tokens"] == 500
    assert 1 <= stage["snippets_given"] < wide_stage["snippets_given"]
    assert stage["snippets_given"] + stage["snippets_left_out"] == wide_stage["snippets_given"]
    assert len(seen[1]) == stage["snippets_given"] == len(narrow["snippets"])
    # Whole snippets, best first: the narrow prompt is the wide one's head.
    assert sorted(seen[1].values()) == list(range(1, stage["snippets_given"] + 1))
    assert [s["symbol"] for s in narrow["snippets"]] == [
        s["symbol"] for s in wide["snippets"][: stage["snippets_given"]]
    ]
    assert any("LLM_CONTEXT_TOKENS" in w for w in narrow["warnings"])
    assert chat_model.requests_to("/api/chat")[-1].body["options"]["num_ctx"] == 500


@pytest.mark.django_db
def test_an_answer_past_the_ask_timeout_ends_with_what_was_written_and_says_so(
    shop: Repository, chat_model: ModelServer, settings: Any
) -> None:
    settings.REPO_SEARCH_ASK_TIMEOUT_SECS = 1.0
    chat_model.queue_chat("The pool is configured in configure_pool [1]. " * 40)
    chat_model.drip = 0.02  # ~500 pieces: well past the second allowed
    body = token_client().post("/api/ask", {"question": QUESTION}, format="json").json()
    assert body["answered"] and body["answer"]["raw"].startswith("The pool is configured")
    assert len(body["answer"]["raw"]) < 40 * 46
    assert any("REPO_SEARCH_ASK_TIMEOUT_SECS" in w for w in body["warnings"])
    answer = next(t for t in body["trace"] if t["name"] == "answer")
    assert answer["detail"]["finish_reason"] == "time"
    assert body["sources"][0]["symbol"] == "configure_pool"


def test_a_silent_model_gets_keep_alive_comments_until_it_writes(
    site: str, headers: dict[str, str], chat_model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from search.ask import stream

    monkeypatch.setattr(stream, "KEEPALIVE_SECS", 0.3)
    chat_model.queue_chat("configure_pool [1].")
    chat_model.fail_next("slow", delay=1.5)  # thinking before the first word
    with httpx.stream(
        "POST", f"{site}/api/ask", json={"question": QUESTION}, headers=headers, timeout=30
    ) as response:
        lines = list(response.iter_lines())
    comments = [i for i, line in enumerate(lines) if line == ": keep-alive"]
    first_event = lines.index("event: sources")
    first_delta = lines.index("event: delta")
    assert comments and all(first_event < i < first_delta for i in comments)
    assert "event: done" in lines
