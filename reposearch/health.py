"""``GET /api/health``: is each part of the system up? 200 when the required parts are, else 503.

Required: the database (with pgvector), the broker and at least one live Celery worker (a real
ping). The embedding and chat models are reported but not required: without them indexing still
completes and full-text search still answers.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reposearch.celery import app as celery_app

PING_TIMEOUT_SECS = 1.0


def check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            cursor.execute("SHOW server_version")
            server = cursor.fetchone()
    except Exception as error:
        return {"ok": False, "error": f"database unreachable: {type(error).__name__}"}
    if row is None:
        return {"ok": False, "error": "the pgvector extension is not installed (run migrations)"}
    return {"ok": True, "postgres": server[0] if server else None, "pgvector": row[0]}


def check_broker() -> dict[str, Any]:
    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL,
        socket_timeout=PING_TIMEOUT_SECS,
        socket_connect_timeout=PING_TIMEOUT_SECS,
    )
    try:
        client.ping()
    except redis.RedisError as error:
        return {"ok": False, "error": f"broker unreachable: {type(error).__name__}"}
    finally:
        client.close()
    return {"ok": True}


def check_workers() -> dict[str, Any]:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=int(PING_TIMEOUT_SECS))
            replies = celery_app.control.ping(timeout=PING_TIMEOUT_SECS, connection=conn)
    except Exception as error:
        return {"ok": False, "count": 0, "error": f"could not ping workers: {type(error).__name__}"}
    names = sorted(name for reply in replies or [] for name in reply)
    if not names:
        return {"ok": False, "count": 0, "error": "no Celery worker answered the ping"}
    return {"ok": True, "count": len(names), "workers": names}


def check_models() -> dict[str, Any]:
    try:
        from llm.health import model_status
    except ImportError:
        return {"embedding": {"loaded": False, "error": "model layer not installed"}}
    try:
        return dict(model_status())
    except Exception as error:
        return {"embedding": {"loaded": False, "error": f"{type(error).__name__}: {error}"}}


def health_report() -> tuple[bool, dict[str, Any]]:
    started = time.monotonic()
    database = check_database()
    broker = check_broker()
    workers = check_workers() if broker["ok"] else {"ok": False, "count": 0, "error": "broker down"}
    report: dict[str, Any] = {
        "database": database,
        "broker": broker,
        "workers": workers,
        "models": check_models(),
    }
    down = [name for name in ("database", "broker", "workers") if not report[name]["ok"]]
    report["status"] = "ok" if not down else "unavailable"
    report["down"] = down
    report["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return not down, report


class HealthView(APIView):
    """Readiness of the database, broker, workers and models."""

    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    @extend_schema(responses={200: dict, 503: dict})
    def get(self, request: Request) -> Response:
        ok, report = health_report()
        return Response(report, status=200 if ok else 503)
