"""Streamed chat answers, constrained JSON output and the per-process call limit, against the
wire-protocol test server (``tests.model_server``): both protocols and their failures."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from llm import ModelBusy, ModelResponseError, ModelUnavailable, get_chat, http
from llm.streaming import StreamStats
from tests.llm.test_llm_remote import PROVIDERS, settings_for
from tests.model_server import ModelServer, wait_until

ANSWER = "The pool is configured by configure_pool [1], which reads its size [2]."
MESSAGES = [{"role": "user", "content": "where is the pool configured?"}]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    started = ModelServer().start()
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    calls: list[float] = []
    monkeypatch.setattr(http, "sleep", calls.append)
    return calls


def chat_for(server: ModelServer, provider: str, **kw: Any) -> Any:
    return get_chat(settings_for(server, provider, **kw))


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
def test_the_answer_arrives_in_pieces_that_make_up_the_whole(
    server: ModelServer, provider: str, embed_path: str, chat_path: str
) -> None:
    server.queue_chat(ANSWER)
    stats = StreamStats()
    pieces = list(
        chat_for(server, provider).stream(MESSAGES, max_tokens=50, timeout=5, stats=stats)
    )
    assert "".join(pieces) == ANSWER
    assert len(pieces) == stats.pieces > 10  # 4 characters a piece: it really streamed
    assert stats.done and stats.finish_reason == "stop" and stats.first_piece_s is not None
    body = server.requests_to(chat_path)[-1].body
    assert body["stream"] is True and body["messages"] == MESSAGES
    if provider == "ollama":
        assert body["options"]["num_ctx"] == 8192 and body["options"]["num_predict"] == 50
    else:
        assert body["max_tokens"] == 50


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
def test_server_errors_before_the_first_piece_are_retried(
    server: ModelServer, provider: str, embed_path: str, chat_path: str, no_backoff: list[float]
) -> None:
    server.queue_chat(ANSWER)
    server.fail_next("500", times=2)
    assert "".join(chat_for(server, provider).stream(MESSAGES, max_tokens=50, timeout=5)) == ANSWER
    assert len(server.requests_to(chat_path)) == 3 and len(no_backoff) == 2


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
def test_a_stream_cut_mid_answer_fails_after_the_text_that_came(
    server: ModelServer, provider: str, embed_path: str, chat_path: str
) -> None:
    server.queue_chat(ANSWER)
    server.fail_next("cut", after=3)
    got: list[str] = []
    with pytest.raises(ModelUnavailable, match="stream ended before the model finished"):
        for piece in chat_for(server, provider).stream(MESSAGES, max_tokens=50, timeout=5):
            got.append(piece)
    assert "".join(got) == ANSWER[:12]
    assert len(server.requests_to(chat_path)) == 1  # text had come: not retried


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
@pytest.mark.parametrize(
    ("kind", "message"),
    [("malformed", "streamed a piece that is not JSON"), ("stream_error", "error mid-answer")],
)
def test_a_broken_or_error_piece_is_a_bad_response(
    server: ModelServer, provider: str, embed_path: str, chat_path: str, kind: str, message: str
) -> None:
    server.queue_chat(ANSWER)
    server.fail_next(kind, after=2)
    with pytest.raises(ModelResponseError, match=message):
        list(chat_for(server, provider).stream(MESSAGES, max_tokens=50, timeout=5))


def test_a_model_that_stops_writing_fails_after_the_idle_timeout(server: ModelServer) -> None:
    server.queue_chat(ANSWER)
    server.fail_next("stall", after=2, delay=5)
    chat = chat_for(server, "openai")
    with pytest.raises(ModelUnavailable, match=r"stopped writing for 0\.3s"):
        list(chat.stream(MESSAGES, max_tokens=50, timeout=5, idle_timeout=0.3))


def test_a_slow_drip_ends_at_the_whole_answers_timeout_with_what_it_wrote(
    server: ModelServer,
) -> None:
    server.queue_chat(ANSWER)
    server.drip = 0.05  # each piece well inside the idle timeout, the whole answer is not
    chat = chat_for(server, "ollama")
    stats = StreamStats()
    text = "".join(chat.stream(MESSAGES, max_tokens=50, timeout=0.4, idle_timeout=2, stats=stats))
    assert text and ANSWER.startswith(text) and len(text) < len(ANSWER)
    assert stats.finish_reason == "time"
    server.queue_chat(ANSWER)
    server.fail_next("slow", delay=3)  # no text at all within the time: an error
    with pytest.raises(ModelUnavailable, match=r"no answer within 0\.4s"):
        list(chat.stream(MESSAGES, max_tokens=50, timeout=0.4, idle_timeout=2))


def test_a_slow_first_piece_is_a_read_timeout(server: ModelServer) -> None:
    server.fail_next("slow", delay=3)
    with pytest.raises(ModelUnavailable, match=r"no answer within 0\.3s"):
        list(
            chat_for(server, "ollama").stream(MESSAGES, max_tokens=50, timeout=5, idle_timeout=0.3)
        )


def test_closing_the_stream_stops_the_model_server_writing(server: ModelServer) -> None:
    server.queue_chat(ANSWER * 4)
    server.drip = 0.02
    stream = chat_for(server, "openai").stream(MESSAGES, max_tokens=200, timeout=10)
    assert next(stream) and next(stream)
    stream.close()  # the client went away
    assert wait_until(lambda: server.abandoned_streams == 1)
    assert server.pieces_sent < len(ANSWER * 4) // 4


def test_cancelling_the_async_stream_closes_the_upstream_request(server: ModelServer) -> None:
    server.queue_chat(ANSWER * 4)
    server.drip = 0.02
    chat = chat_for(server, "ollama")

    async def read_two_then_cancel() -> list[str]:
        got: list[str] = []

        async def consume() -> None:
            async for piece in chat.astream(MESSAGES, max_tokens=200, timeout=10):
                got.append(piece)

        task = asyncio.create_task(consume())
        while len(got) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return got

    got = asyncio.run(read_two_then_cancel())
    assert len(got) >= 2
    assert wait_until(lambda: server.abandoned_streams == 1)
    assert server.pieces_sent < len(ANSWER * 4) // 4


def test_the_async_stream_reads_both_protocols(server: ModelServer) -> None:
    async def read(provider: str) -> str:
        server.queue_chat(ANSWER)
        chat = chat_for(server, provider)
        return "".join([p async for p in chat.astream(MESSAGES, max_tokens=50, timeout=5)])

    assert asyncio.run(read("ollama")) == ANSWER
    assert asyncio.run(read("openai")) == ANSWER


SCHEMA = {
    "type": "object",
    "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["queries"],
}


def test_ollama_gets_the_schema_as_its_format(server: ModelServer) -> None:
    server.queue_chat('{"queries": ["a"]}')
    chat_for(server, "ollama").chat(MESSAGES, max_tokens=50, timeout=5, schema=SCHEMA)
    assert server.requests_to("/api/chat")[-1].body["format"] == SCHEMA


@pytest.mark.parametrize("status", [500, 422])
def test_openai_schema_falls_back_to_the_form_the_server_takes_and_remembers_it(
    server: ModelServer, status: int
) -> None:
    server.reject_json_schema = True  # as llama-cpp-python's server does (with a 500)
    server.reject_status = status
    server.queue_chat('{"queries": ["a"]}', '{"queries": ["b"]}')
    chat = chat_for(server, "openai")
    assert chat.chat(MESSAGES, max_tokens=50, timeout=5, schema=SCHEMA) == '{"queries": ["a"]}'
    assert chat.chat(MESSAGES, max_tokens=50, timeout=5, schema=SCHEMA) == '{"queries": ["b"]}'
    formats = [r.body["response_format"] for r in server.requests_to("/v1/chat/completions")]
    refused = [f for f in formats if f["type"] == "json_schema"]
    assert refused and refused[0]["json_schema"]["schema"] == SCHEMA  # asked first (retried on 500)
    assert formats[len(refused) :] == [{"type": "json_object", "schema": SCHEMA}] * 2  # remembered


def test_a_burst_of_calls_waits_for_a_slot_then_is_refused_as_busy(
    server: ModelServer, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENT_CALLS = 1
    settings.LLM_QUEUE_WAIT_SECS = 0.3
    server.queue_chat(ANSWER)
    release = threading.Event()
    server.chat_handler = lambda messages: (release.wait(10), "later")[1]
    chat = chat_for(server, "ollama")
    holder = chat.stream(MESSAGES, max_tokens=50, timeout=10)
    assert next(holder)  # one stream holds the only slot
    with pytest.raises(ModelBusy, match="1 chat call"):
        chat.chat(MESSAGES, max_tokens=50, timeout=5)
    settings.LLM_QUEUE_WAIT_SECS = 10.0  # now a waiting call queues until the slot frees
    waiting: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: waiting.update(answer=chat.chat(MESSAGES, max_tokens=50, timeout=10))
    )
    thread.start()
    assert "".join(holder)  # the first stream finishes and frees its slot
    release.set()
    thread.join(10)
    assert waiting["answer"] == "later"
    assert server.max_in_flight == 1  # the model server never saw two calls at once
