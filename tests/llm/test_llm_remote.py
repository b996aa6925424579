"""Ollama and OpenAI-compatible providers against a real HTTP server, failure modes included."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from llm import ModelResponseError, ModelUnavailable, get_chat, get_embedder, http
from llm.config import ModelSettings
from llm.errors import ChatUnavailable
from tests.model_server import ModelServer

SECRET = "sk-test-super-secret-key-1234"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    started = ModelServer().start()
    yield started
    started.stop()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Back-off sleeps are recorded instead of waited."""
    calls: list[float] = []
    monkeypatch.setattr(http, "sleep", calls.append)
    return calls


def settings_for(server: ModelServer, provider: str, **kw: object) -> ModelSettings:
    base = {
        "chat_provider": provider,
        "chat_model": "llama3.2",
        "embedding_provider": provider,
        "embedding_model": "nomic-embed-text",
        "embedding_dim": 384,
        "base_url": server.url,
        "api_key": SECRET if provider == "openai" else None,
        "timeout": 5.0,
        "connect_timeout": 1.0,
        "max_retries": 2,
    }
    return ModelSettings(**{**base, **kw})  # type: ignore[arg-type]


PROVIDERS = [
    ("ollama", "/api/embed", "/api/chat"),
    ("openai", "/v1/embeddings", "/v1/chat/completions"),
]


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
def test_embeddings_in_batches_of_32(
    server: ModelServer, provider: str, embed_path: str, chat_path: str
) -> None:
    embedder = get_embedder(settings_for(server, provider))
    texts = [f"text number {i} about parsing headers" for i in range(70)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [r.batch_size for r in server.requests_to(embed_path)] == [32, 32, 6]
    assert embedder.space_key == f"{provider}/nomic-embed-text/384"
    # Order is kept: the server's vector for text 69 is the 70th row.
    again = embedder.embed([texts[69]])
    np.testing.assert_allclose(again[0], vectors[69], atol=1e-6)


@pytest.mark.parametrize(("provider", "embed_path", "chat_path"), PROVIDERS)
def test_chat_wire_format(
    server: ModelServer, provider: str, embed_path: str, chat_path: str
) -> None:
    server.queue_chat("first answer", lambda messages: messages[-1]["content"].upper())
    chat = get_chat(settings_for(server, provider))
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert chat.chat(messages, max_tokens=50, timeout=5) == "first answer"
    assert chat.chat(messages, max_tokens=50, timeout=5) == "HI"
    body = server.requests_to(chat_path)[0].body
    assert body["model"] == "llama3.2" and body["messages"] == messages
    assert body["stream"] is False
    if provider == "ollama":
        assert body["options"] == {"temperature": 0.0, "num_predict": 50, "num_ctx": 8192}
    else:
        assert body["max_tokens"] == 50 and body["temperature"] == 0.0
    chat.ping(timeout=2)  # /api/tags or /v1/models lists the model


def test_openai_sends_bearer_key_and_ollama_does_not(server: ModelServer) -> None:
    get_embedder(settings_for(server, "openai")).embed(["a"])
    get_embedder(settings_for(server, "ollama", api_key=SECRET)).embed(["a"])
    openai_req, ollama_req = server.requests
    assert openai_req.headers["authorization"] == f"Bearer {SECRET}"
    assert "authorization" not in ollama_req.headers


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_openai_base_url_with_or_without_v1(server: ModelServer, suffix: str) -> None:
    cfg = settings_for(server, "openai", base_url=server.url + suffix)
    get_embedder(cfg).embed(["x"])
    server.queue_chat("ok")
    get_chat(cfg).chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=5)
    assert [r.path for r in server.requests] == ["/v1/embeddings", "/v1/chat/completions"]


def test_wrong_dimension_is_a_clear_error(server: ModelServer) -> None:
    server.dim = 512
    embedder = get_embedder(settings_for(server, "ollama", embedding_dim=768))
    with pytest.raises(ModelResponseError, match="model returned 512-dim vectors, expected 768"):
        embedder.embed(["a", "b"])
    assert len(server.requests) == 1  # a wrong answer is not retried


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_garbage_json_is_a_response_error(
    server: ModelServer, provider: str, sleeps: list[float]
) -> None:
    server.fail_next("garbage")
    with pytest.raises(ModelResponseError, match="invalid JSON") as info:
        get_embedder(settings_for(server, provider)).embed(["a"])
    assert provider in str(info.value) and server.url in str(info.value)
    assert sleeps == []


def test_wrong_shapes_are_response_errors(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = get_embedder(settings_for(server, "ollama"))
    answers = {
        "count": {"embeddings": [[1.0] + [0.0] * 383]},
        "nan": {"embeddings": [[float("nan")] * 384, [1.0] * 384]},
        "missing": {"vectors": []},
        "strings": {"embeddings": [["a"] * 384, ["b"] * 384]},
    }
    for name, answer in answers.items():
        monkeypatch.setattr(server, "respond", lambda *a, answer=answer: (200, {}, _dump(answer)))
        with pytest.raises(ModelResponseError) as info:
            embedder.embed(["a", "b"])
        assert {"count": "1 vectors for 2 texts", "nan": "NaN"}.get(name, "") in str(info.value)
    server.queue_chat("x")
    monkeypatch.setattr(server, "respond", lambda *a: (200, {}, b'{"choices": []}'))
    with pytest.raises(ModelResponseError, match="choices"):
        get_chat(settings_for(server, "openai")).chat(
            [{"role": "user", "content": "x"}], max_tokens=5, timeout=5
        )


def _dump(value: object) -> bytes:
    import json

    return json.dumps(value).encode()


def test_500_is_retried_then_succeeds(server: ModelServer, sleeps: list[float]) -> None:
    server.fail_next("500", times=2)
    vectors = get_embedder(settings_for(server, "ollama")).embed(["a"])
    assert vectors.shape == (1, 384)
    assert len(server.requests) == 3
    assert sleeps == [0.25, 0.5]  # exponential back-off


def test_persistent_500_gives_up_after_max_retries(
    server: ModelServer, sleeps: list[float]
) -> None:
    server.fail_next("500", times=100)
    with pytest.raises(ModelUnavailable, match=r"HTTP 500.*gave up after 3 attempts"):
        get_embedder(settings_for(server, "openai")).embed(["a"])
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_with_no_retries_the_message_says_one_attempt(
    server: ModelServer, sleeps: list[float]
) -> None:
    server.fail_next("500", times=100)
    with pytest.raises(ModelUnavailable, match=r"HTTP 500.*\(gave up after 1 attempt\)"):
        get_embedder(settings_for(server, "openai", max_retries=0)).embed(["a"])
    assert len(server.requests) == 1 and sleeps == []


def test_4xx_is_not_retried(server: ModelServer, sleeps: list[float]) -> None:
    server.fail_next("status", status=404)
    with pytest.raises(ModelResponseError, match=r"HTTP 404.*scripted failure"):
        get_chat(settings_for(server, "ollama")).chat(
            [{"role": "user", "content": "x"}], max_tokens=5, timeout=5
        )
    assert len(server.requests) == 1 and sleeps == []


def test_429_honours_retry_after(server: ModelServer, sleeps: list[float]) -> None:
    server.fail_next("429", retry_after="2")
    server.queue_chat("fine")
    chat = get_chat(settings_for(server, "openai", timeout=30))
    assert chat.chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=30) == "fine"
    assert sleeps == [2.0]


def test_429_retry_after_is_capped(server: ModelServer, sleeps: list[float]) -> None:
    server.fail_next("429", retry_after="3600")
    get_embedder(settings_for(server, "ollama", timeout=60)).embed(["a"])
    assert sleeps == [http.RETRY_AFTER_CAP_SECS]


def test_retry_after_beyond_the_timeout_fails_at_once(
    server: ModelServer, sleeps: list[float]
) -> None:
    server.fail_next("429", retry_after="5")
    chat = get_chat(settings_for(server, "ollama"))
    with pytest.raises(ModelUnavailable, match="would pass the 1s timeout"):
        chat.chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=1)
    assert sleeps == [] and len(server.requests) == 1


def test_slow_server_times_out_without_retry(server: ModelServer) -> None:
    server.fail_next("slow", delay=10)
    chat = get_chat(settings_for(server, "ollama"))
    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match=r"no answer within 0.5s"):
        chat.chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=0.5)
    assert len(server.requests) == 1  # a slow model is not asked twice
    assert time.monotonic() - started < 5  # sanity bound only; the count above is the test


def test_embedding_read_timeout_comes_from_settings(server: ModelServer) -> None:
    server.fail_next("slow", delay=10)
    embedder = get_embedder(settings_for(server, "openai", timeout=0.3))
    with pytest.raises(ModelUnavailable, match="read timeout"):
        embedder.embed(["a"])
    assert len(server.requests) == 1


def test_connection_refused_retries_with_backoff_then_unavailable(
    server: ModelServer, sleeps: list[float]
) -> None:
    cfg = settings_for(server, "ollama")
    server.stop()
    with pytest.raises(ModelUnavailable, match=r"connection failed.*gave up after 3 attempts"):
        get_embedder(cfg).embed(["a"])
    assert sleeps == [0.25, 0.5]
    with pytest.raises(ModelUnavailable):
        get_chat(cfg).chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=5)


def test_dropped_connection_is_retried(server: ModelServer, sleeps: list[float]) -> None:
    server.fail_next("disconnect")
    vectors = get_embedder(settings_for(server, "ollama")).embed(["a"])
    assert vectors.shape == (1, 384) and len(sleeps) == 1


def test_retries_never_pass_the_overall_timeout(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(http, "monotonic", lambda: clock[0])
    monkeypatch.setattr(http, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    server.fail_next("500", times=100)
    cfg = settings_for(server, "ollama", max_retries=50)
    with pytest.raises(ModelUnavailable, match="would pass the 2s timeout"):
        get_chat(cfg).chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=2)
    assert clock[0] - 1000.0 <= 2.0  # total back-off stayed inside the caller's timeout
    assert len(server.requests) == 4  # 0.25 + 0.5 + 1 = 1.75 s of waiting, then stop


def test_secret_never_in_errors_or_logs(
    server: ModelServer, caplog: pytest.LogCaptureFixture, sleeps: list[float]
) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = settings_for(server, "openai", base_url=f"http://user:{SECRET}@127.0.0.1:{server.port}")
    errors: list[Exception] = []
    # A 401 whose body echoes the key, a 500 that is retried (and logged), a refused connection.
    server.fail_next("status", status=401)
    monkey_body = {"error": {"message": f"invalid key {SECRET}"}}
    original = server.respond
    server.respond = lambda *a: (401, {}, _dump(monkey_body))  # type: ignore[method-assign]
    server.clear_failures()
    with pytest.raises(ModelResponseError) as info:
        get_embedder(cfg).embed(["a"])
    errors.append(info.value)
    assert "LLM_API_KEY" in str(info.value) and "***" in str(info.value)
    server.respond = original  # type: ignore[method-assign]
    server.fail_next("500", times=10)
    with pytest.raises(ModelUnavailable) as info2:
        get_chat(cfg).chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=5)
    errors.append(info2.value)
    server.stop()
    with pytest.raises(ModelUnavailable) as info3:
        get_embedder(cfg).embed(["a"])
    errors.append(info3.value)
    texts = [str(e) for e in errors] + [repr(e) for e in errors] + [caplog.text]
    texts += [
        repr(cfg),
        repr(get_embedder(cfg)),
        repr(http.Endpoint("openai", cfg.base_url, SECRET)),
    ]
    assert caplog.records  # the retries were logged
    for text in texts:
        assert SECRET not in text
    assert "127.0.0.1" in str(errors[1]) and "openai" in str(errors[1])


def test_chat_requires_bounds_and_reports_missing_model(server: ModelServer) -> None:
    chat = get_chat(settings_for(server, "ollama"))
    with pytest.raises(ValueError):
        chat.chat([{"role": "user", "content": "x"}], max_tokens=0, timeout=5)
    with pytest.raises(ValueError):
        chat.chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=0)
    with pytest.raises(ValueError):
        chat.chat([{"role": "robot", "content": "x"}], max_tokens=5, timeout=5)
    missing = get_chat(settings_for(server, "openai", chat_model="gpt-9"))
    with pytest.raises(ModelResponseError, match="'gpt-9' is not available"):
        missing.ping(timeout=2)


def test_no_chat_model_configured() -> None:
    chat = get_chat(ModelSettings(chat_provider="none"))
    assert chat.available is False
    with pytest.raises(ChatUnavailable, match="no chat model"):
        chat.chat([{"role": "user", "content": "x"}], max_tokens=5, timeout=5)
    assert issubclass(ChatUnavailable, ModelUnavailable)


def test_client_is_shared_and_recreated_after_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    first = http.get_client()
    assert http.get_client() is first
    monkeypatch.setattr(http.os, "getpid", lambda: -1)  # as seen from a forked child
    child = http.get_client()
    assert child is not first and http.get_client() is child


def test_settings_repr_hides_key() -> None:
    cfg = replace(ModelSettings(), api_key=SECRET)
    assert SECRET not in repr(cfg) and "api_key" in repr(cfg)
