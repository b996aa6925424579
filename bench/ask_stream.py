"""Streamed ask latency against the configured chat model: time to the sources event, to the
first answer word and to the end, through the real HTTP path (uvicorn, a2wsgi, Django, SSE).

    .venv/bin/python -m reposearch.embedded_stack run -- sh -c '
      .venv/bin/python manage.py migrate -v0 &&
      .venv/bin/python bench/eval/index_corpus.py --name wonka-6.3.6 &&
      LLM_CONTEXT_TOKENS=2048 .venv/bin/python -m tests.llama_server --n-ctx 2048 -- \
        .venv/bin/python bench/ask_stream.py --repo wonka-6.3.6 \
          --questions bench/eval/wonka-queries.json --count 6 --json bench/results/ask-stream.json'

Each question is asked once with ``Accept: text/event-stream`` (k snippets, no HyDE or
call-graph expansion), then -- unless ``--no-json`` -- once more as the plain JSON ask, for its
total. Client-side times are measured from sending the request; the server's own timings
(``first_token_ms``, ``model_ms``) and the answer stage's prompt sizing come from the ``done``
event. One warm-up chat call goes first (a fresh llama.cpp server's first answer is slow).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def serve() -> tuple[str, Any]:
    import uvicorn

    from reposearch.asgi import build_application
    from reposearch.embedded_services import free_port

    port = free_port()
    config = uvicorn.Config(build_application(), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def bench_token() -> str:
    from django.contrib.auth.models import User

    from accounts.tokens import create_token

    user = User.objects.filter(username="bench-ask").first() or User.objects.create_superuser(
        "bench-ask", password=None
    )
    return create_token(user, "bench ask stream", "read").secret


def streamed(base: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    import httpx

    marks: dict[str, Any] = {"deltas": 0}
    started = time.perf_counter()
    with httpx.stream(
        "POST", f"{base}/api/ask", json=body, headers=headers, timeout=600
    ) as response:
        marks["status"] = response.status_code
        name = ""
        for line in response.iter_lines():
            now = round((time.perf_counter() - started) * 1000, 1)
            if line.startswith("event:"):
                name = line[6:].strip()
                if name == "sources":
                    marks.setdefault("sources_ms", now)
                elif name == "delta":
                    marks.setdefault("first_delta_ms", now)
                    marks["deltas"] += 1
            elif line.startswith("data:") and name in ("done", "error"):
                marks["end"] = name
                marks["end_ms"] = now
                marks["data"] = json.loads(line[5:])
    return marks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="repository name, e.g. wonka-6.3.6")
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--no-json", action="store_true", help="skip the plain JSON asks")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    args = parser.parse_args(argv)

    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    import httpx
    from django.conf import settings

    import llm
    from indexing.models import Repository

    repository = Repository.objects.get(name=args.repo)
    questions = [q["query"] for q in json.loads(args.questions.read_text())["queries"]]
    questions = questions[: args.count]
    chat = llm.get_chat()
    warm = time.perf_counter()
    chat.chat([{"role": "user", "content": "hi"}], max_tokens=4, timeout=300)
    warm_ms = round((time.perf_counter() - warm) * 1000)
    base, server = serve()
    headers = {"Authorization": f"Bearer {bench_token()}", "Accept": "text/event-stream"}
    rows: list[dict[str, Any]] = []
    for question in questions:
        body = {"question": question, "k": args.k, "repo_ids": [str(repository.pk)]}
        marks = streamed(base, headers, body)
        data = marks.pop("data", {})
        row: dict[str, Any] = {"question": question, **marks}
        if marks.get("end") == "done":
            stage = next(t for t in data["trace"] if t["name"] == "answer")
            row |= {
                "server": data["timings"],
                "prompt": {k: v for k, v in stage["detail"].items() if k not in ("cited",)},
                "cited": len(data["sources"]),
                "answer_chars": len(data["answer"]["raw"]),
            }
        else:
            row["error"] = data.get("error", {}).get("message", "")[:200]
        if not args.no_json:
            started = time.perf_counter()
            plain = httpx.post(
                f"{base}/api/ask",
                json=body,
                headers={**headers, "Accept": "application/json"},
                timeout=600,
            )
            row["json_status"] = plain.status_code
            row["json_total_ms"] = round((time.perf_counter() - started) * 1000, 1)
        rows.append(row)
        print(
            f"{row.get('sources_ms', '-'):>8} ms sources  {row.get('first_delta_ms', '-'):>8} ms "
            f"first word  {row.get('end_ms', '-'):>8} ms {row.get('end')}  "
            f"json {row.get('json_status', '-')} {row.get('json_total_ms', '-')} ms  {question[:50]}",
            flush=True,
        )
    server.should_exit = True

    def median(key: str) -> float | None:
        values = [r[key] for r in rows if isinstance(r.get(key), int | float)]
        return round(statistics.median(values), 1) if values else None

    summary = {
        "model": getattr(chat, "model", ""),
        "provider": getattr(chat, "provider", ""),
        "context_tokens": settings.LLM_CONTEXT_TOKENS,
        "k": args.k,
        "questions": len(rows),
        "answered": sum(1 for r in rows if r.get("end") == "done"),
        "warm_up_ms": warm_ms,
        "median_sources_ms": median("sources_ms"),
        "median_first_word_ms": median("first_delta_ms"),
        "median_end_ms": median("end_ms"),
        "median_json_total_ms": median("json_total_ms"),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
