"""URLs for browser tests of the search page against the documented ``POST /api/search`` shape.

``fake_search`` answers like the real endpoint (results with every score field, per-method hit
totals, a trace with ran / skipped / failed stages) from a plain ``ILIKE`` over the indexed
chunks, so the page can be tested without depending on how ranking works. Everything else is
the real site.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from django.db.models import Q
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from indexing.models import Chunk, Repository


def _trace(body: dict[str, Any], ms: float) -> list[dict[str, Any]]:
    def stage(name: str, on: bool, why_off: str, **extra: Any) -> dict[str, Any]:
        status = "ran" if on else "skipped"
        return {
            "name": name,
            "status": status,
            "reason": "" if on else why_off,
            "ms": ms if on else 0,
            **extra,
        }

    return [
        stage("expansion", bool(body.get("use_expansion")), "use_expansion is off"),
        stage(
            "bm25",
            bool(body.get("use_bm25", True)),
            "use_bm25 is off",
            detail={"query": "original"},
        ),
        {
            "name": "vector",
            "status": "skipped",
            "reason": "no vectors for the current embedding model",
            "ms": 0,
        },
        stage("fusion", True, ""),
        {
            "name": "rerank",
            "status": "failed",
            "reason": "chat model unreachable (connection refused)",
            "ms": 2.0,
        }
        if body.get("use_rerank")
        else stage("rerank", False, "use_rerank is off"),
        stage("blend", False, "no rerank scores"),
    ]


@csrf_exempt
def fake_search(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    body = json.loads(request.body)
    words = [w for w in re.findall(r"[A-Za-z0-9_]+", body["query"]) if len(w) > 2]
    match = Q()
    for word in words:
        match |= Q(content__icontains=word)
    live = Q()
    for repo_id, generation in Repository.objects.values_list("pk", "active_generation"):
        live |= Q(repository_id=repo_id, generation=generation)
    chunks = Chunk.objects.filter(live).filter(match).select_related("repository")
    if body.get("languages"):
        chunks = chunks.filter(language__in=body["languages"])
    if not body.get("include_tests"):
        chunks = chunks.filter(is_test=False)
    scored = sorted(
        ((sum(chunk.content.lower().count(w.lower()) for w in words), chunk) for chunk in chunks),
        key=lambda pair: -pair[0],
    )[: body.get("limit", 10)]
    results = [
        {
            "repo_id": str(chunk.repository_id),
            "repo_name": chunk.repository.name,
            "file_path": chunk.path,
            "chunk_index": chunk.index,
            "content": chunk.content,
            "language": chunk.language,
            "start_line": chunk.start_line,
            "end_line": chunk.end_line,
            "symbol": chunk.symbol,
            "commit": chunk.repository.last_indexed_commit,
            "bm25_score": float(score),
            "vector_score": None,
            "combined_score": round(1 / (60 + rank), 4),
            "rerank_score": None,
        }
        for rank, (score, chunk) in enumerate(scored, start=1)
    ]
    ms = round((time.monotonic() - started) * 1000, 1)
    return JsonResponse(
        {
            "results": results,
            "total_bm25_hits": len(results),
            "total_vector_hits": 0,
            "trace": _trace(body, ms),
            "query": body["query"],
        }
    )


urlpatterns = [
    path("api/search", fake_search),
    path("", include("reposearch.urls")),
]
