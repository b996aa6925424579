"""The Ask page: a question, an answer whose ``[n]`` citations open the file view at the lines.

The page calls ``POST /api/ask`` from the browser and posts the JSON it got (an answer, or the
502/503 error that carries the retrieved sources) to ``render_answer``, which returns the HTML
fragment: the answer escaped with its citations linked, the sources, warnings and the pipeline.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from accounts.visibility import viewer_for
from frontend.access import reader_fragment, reader_page
from frontend.ask import build_answer, build_ask_pipeline, build_failure
from indexing.visible import visible_repositories
from search.ask.serializers import MAX_QUESTION_CHARS


@require_GET
@reader_page
def ask_page(request: HttpRequest) -> HttpResponse:
    visible = visible_repositories(viewer_for(request.user))
    repositories = list(visible.only("id", "name", "status", "active_generation"))
    return render(
        request,
        "frontend/ask.html",
        {
            "page": "ask",
            "repositories": repositories,
            "has_indexed": any(repo.active_generation for repo in repositories),
            "max_question_chars": MAX_QUESTION_CHARS,
        },
    )


@require_POST
@reader_fragment
def render_answer(request: HttpRequest) -> HttpResponse:
    """HTML for one ask, from ``{"question", "response"}`` or ``{"question", "error"}``."""
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return HttpResponseBadRequest("expected a JSON body")
    if not isinstance(body, dict):
        return HttpResponseBadRequest('expected {"question", "response"} or {"question", "error"}')
    question = str(body.get("question") or "")[:MAX_QUESTION_CHARS]
    response: Any = body.get("response")
    error: Any = body.get("error")
    if isinstance(response, dict):
        view = build_answer(response)
        view.question = view.question or question
    elif isinstance(error, dict):
        view = build_failure(error, question)
    else:
        return HttpResponseBadRequest('expected {"question", "response"} or {"question", "error"}')
    return render(
        request,
        "frontend/_answer.html",
        {"ask": view, "pipeline": build_ask_pipeline(view)},
    )
