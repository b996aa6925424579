"""The Ask page and its answer fragment, through Django's test client.

The fragment is rendered from the JSON ``POST /api/ask`` returns: the model's text must come out
escaped, ``[n]`` must link to source n's file view at its lines (built from chunk metadata), a
502/503 must show the retrieved sources, and unsafe links must never become an href.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from frontend.ask import render_answer, summarise_timings
from indexing.models import Chunk, Repository
from tests.ask import corpus
from tests.frontend.signed_in import api_client, ui_client

pytestmark = pytest.mark.django_db
shop = corpus.shop  # a small indexed repository (fixture)
chat_model = corpus.chat_model  # the app's chat model pointed at the test model server

REPO_ID = str(uuid.uuid4())
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def source(number: int | None, path: str, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {
        "number": number,
        "context_number": extra.pop("context_number", number or 1),
        "repo_id": REPO_ID,
        "repo_name": "acme/shop",
        "path": path,
        "start_line": start,
        "end_line": end,
        "symbol": extra.pop("symbol", "configure_pool"),
        "kind": "function",
        "language": "python",
        "commit": COMMIT,
        "location": f"acme/shop:{path}:{start}-{end}",
        "permalink": f"https://github.com/acme/shop/blob/{COMMIT}/{path}#L{start}-L{end}",
        "app_url": f"/repos/{REPO_ID}/file?path=x",
        "upstream_url": f"https://github.com/acme/shop/blob/{COMMIT}/{path}#L{start}-L{end}",
        "origin": "search",
        "via": "",
        **extra,
    }


def answer_response(text: str, sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "question": "where is the pool configured?",
        "answered": True,
        "answer": {"text": text, "markdown": text, "raw": text},
        "sources": sources,
        "snippets": [{**s, "number": None, "cited": True} for s in sources],
        "warnings": [],
        "trace": [
            {"name": "scope", "status": "ran", "reason": "", "ms": 0.4, "detail": {}},
            {"name": "fulltext", "status": "ran", "reason": "", "ms": 3.2, "detail": {"hits": 4}},
            {"name": "callgraph", "status": "ran", "reason": "", "ms": 2, "detail": {"depth": 2}},
            {
                "name": "answer",
                "status": "ran",
                "ms": 812.0,
                "detail": {"cited": [3], "invalid": [9]},
            },
        ],
        "timings": {"retrieve_ms": 12.5, "model_ms": 812.0, "total_ms": 830.4},
        **extra,
    }


def render(payload: dict[str, Any]) -> Any:
    return ui_client().post("/ui/answer", json.dumps(payload), content_type="application/json")


def test_the_ask_page_has_the_question_box_options_and_nav_link(shop: Repository) -> None:
    response = ui_client().get("/ask/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<textarea id="question" name="q"' in html and 'maxlength="2000"' in html
    assert re.search(r'href="/ask/" aria-current="page">Ask</a>', html)
    assert f'name="repo" value="{shop.pk}"' in html
    for name in ("expand", "hyde", "tests", "docs"):
        assert f'name="{name}"' in html
    assert 'data-api="/api/ask"' in html and 'data-render="/ui/answer"' in html
    assert "frontend/ask.js" in html and "Ask about your code" in html
    # Every page links to it.
    assert 'href="/ask/">Ask</a>' in ui_client().get("/").content.decode()


def test_the_empty_page_sends_people_to_add_a_repository() -> None:
    html = ui_client().get("/ask/").content.decode()
    assert "Nothing indexed yet" in html and 'href="/repos/"' in html


def test_model_text_is_escaped_and_citations_link_to_the_file_view_at_the_lines() -> None:
    text = (
        "The pool is set up in `configure_pool` [1] <script>alert(1)</script>, sized by [2].\n"
        "Nothing here [7].\n\n- one [1]\n- two\n\n```python\nx = '<b>' [1]\n```\nend"
    )
    sources = [source(1, "src/pool.py", 4, 8), source(2, "src/pool & co.py", 10, 10)]
    response = render({"question": "q", "response": answer_response(text, sources)})
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    first = f"/repos/{REPO_ID}/-/blob/{COMMIT}/src/pool.py#L4-L8"  # at the cited commit
    assert re.search(rf'<a class="cite" href="{re.escape(first)}"[^>]*>\[1\]</a>', html)
    second = f"/repos/{REPO_ID}/-/blob/{COMMIT}/src/pool%20&amp;%20co.py#L10"
    assert f'href="{second}"' in html
    assert 'aria-label="source 1: acme/shop src/pool.py lines 4-8"' in html
    assert "Nothing here [7]." in html  # a marker with no source stays text
    assert "<code>configure_pool</code>" in html
    assert "<li>one <a" in html and "<li>two</li>" in html
    # In a code block the marker is code, not a link.
    assert '<pre class="answer-code"><code>x = &#x27;&lt;b&gt;&#x27; [1]\n</code></pre>' in html
    # The sources, in order: repository, path:start-end, symbol, short commit, upstream.
    assert html.index('id="source-1"') < html.index('id="source-2"')
    assert "src/pool.py:4-8" in html and "src/pool &amp; co.py:10</a>" in html
    assert f'title="{COMMIT}">{COMMIT[:7]}</code>' in html
    assert f'href="https://github.com/acme/shop/blob/{COMMIT}/src/pool.py#L4-L8"' in html
    # Pipeline and timings.
    assert 'data-stage="fulltext" data-status="ran"' in html
    assert '<span class="stage-name">call graph</span>' in html
    assert "cited 2 of 2 snippets; removed [9]" in html  # counts, not the prompt's numbers
    assert "retrieval 12 ms · model 812 ms · total 830 ms" in html


def test_warnings_and_uncited_snippets_are_shown_and_unsafe_links_are_not() -> None:
    evil = source(1, "a.py", 1, 2, upstream_url="javascript:alert(1)", repo_id="not-a-uuid")
    response = answer_response("See [1].", [evil], warnings=["removed citation(s) [42]: <b>"])
    response["snippets"].append({**source(None, "b.py", 3, 9, context_number=2), "cited": False})
    html = render({"question": "q", "response": response}).content.decode()
    assert "javascript:" not in html
    assert "See [1]." in html  # no valid file URL for the source: the marker stays text
    assert "removed citation(s) [42]: &lt;b&gt;" in html and 'class="panel warnings"' in html
    assert "1 more snippet given to the model, not cited" in html and "b.py:3-9" in html


def test_a_503_shows_the_message_and_the_retrieved_sources() -> None:
    error = {
        "code": "model_unavailable",
        "message": "no chat model could answer: connection refused",
        "details": {
            "sources": [source(None, "src/pool.py", 4, 8, context_number=1)],
            "trace": [{"name": "answer", "status": "failed", "reason": "refused", "ms": 2}],
            "timings": {"retrieve_ms": 5, "total_ms": 9},
        },
    }
    html = render({"question": "where?", "error": error}).content.decode()
    assert "No chat model answered" in html and "connection refused" in html
    assert 'role="alert"' in html and "Retrieved sources" in html
    assert f'href="/repos/{REPO_ID}/-/blob/{COMMIT}/src/pool.py#L4-L8"' in html
    assert 'data-status="failed"' in html and 'class="cite"' not in html


def test_a_busy_model_and_the_first_word_time_are_named_plainly() -> None:
    error = {
        "code": "model_busy",
        "message": "the chat model is busy: 1 chat call(s) already running",
        "details": {
            "sources": [source(None, "src/pool.py", 4, 8, context_number=1)],
            "timings": {"first_token_ms": 1500, "total_ms": 9000},
        },
    }
    html = render({"question": "where?", "error": error}).content.decode()
    assert "The chat model is busy with other questions" in html and "already running" in html
    assert "first word" in html


@pytest.mark.parametrize("body", ["not json", "[]", '{"question": "q"}', '{"response": 3}'])
def test_a_malformed_render_request_is_a_400(body: str) -> None:
    response = ui_client().post("/ui/answer", body, content_type="application/json")
    assert response.status_code == 400


def test_helpers_tolerate_missing_fields() -> None:
    assert render_answer("", []) == ""
    assert summarise_timings({"rerank_ms": 1.5, "total_ms": None}) == [("rerank", "1.5 ms")]
    assert summarise_timings("nope") == []


def test_a_real_answer_renders_with_citations_to_the_cited_chunk(
    shop: Repository, chat_model: Any
) -> None:
    """The API's own JSON, end to end: the [1] link is the cited chunk's file view."""

    def answer(messages: list[dict[str, Any]]) -> str:
        prompt = messages[-1]["content"]
        number = re.search(r"^\[(\d+)\] \S+ -- symbol configure_pool", prompt, re.M)
        assert number, prompt
        return f"configure_pool builds the pool [{number.group(1)}]."

    chat_model.chat_handler = answer
    api = api_client().post(
        "/api/ask", {"question": "where is the pool configured?"}, format="json"
    )
    assert api.status_code == 200, api.content
    html = render({"question": "q", "response": api.json()}).content.decode()
    chunk = Chunk.objects.get(symbol="configure_pool")
    commit = shop.last_indexed_commit
    href = f"/repos/{shop.pk}/-/blob/{commit}/src/pool.py#L{chunk.start_line}-L{chunk.end_line}"
    assert f'<a class="cite" href="{href}"' in html
    assert f"src/pool.py:{chunk.start_line}-{chunk.end_line}" in html
    # The pipeline of the real run: one line with the ask's timings, then the drawing.
    start = html.index('<summary class="pipeline-line">')
    line = html[start : html.index("</summary>", start)]
    assert "total" in line and "ms" in line
    for stage in api.json()["trace"]:
        assert f'data-stage="{stage["name"]}" data-status="{stage["status"]}"' in html
