"""``GET /api/health``: is each part of the system up? 200 when the required parts are, else 503.

Required: the database (with pgvector), the broker and at least one live Celery worker (a real
ping). The embedding and chat models, and the read replicas, are reported but not required:
without models indexing still completes and full-text search still answers; without replicas
searches read the primary.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reposearch.celery import app as celery_app

PING_TIMEOUT_SECS = 1.0
# Orchestrators and the UI call health often, so one ping answers for a few seconds (per
# process; concurrent callers share it).
WORKER_PING_CACHE_SECS = 5.0
# A ping waits its whole timeout unless it knows how many replies to expect: the next pings stop
# as soon as the workers the last full one found have answered (milliseconds, so a probe with a
# 1 s timeout is not failed by a healthy server), and a full one, which counts workers that
# joined since, runs at most this often. A ping that hears fewer than it expects waits the whole
# timeout, so a worker gone is reported at once.
FULL_PING_SECS = 60.0
_worker_ping: dict[str, Any] = {}
_worker_ping_lock = threading.Lock()


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


def check_workers(expected: int | None = None) -> dict[str, Any]:
    """Ping the workers; with ``expected``, stop once that many have answered (``ping`` says
    ``"full"``, or ``"known workers"`` when the replies stopped it)."""
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=int(PING_TIMEOUT_SECS))
            replies = celery_app.control.ping(
                timeout=PING_TIMEOUT_SECS, connection=conn, limit=expected
            )
    except Exception as error:
        return {"ok": False, "count": 0, "error": f"could not ping workers: {type(error).__name__}"}
    names = sorted(name for reply in replies or [] for name in reply)
    ping = "known workers" if expected and len(names) >= expected else "full"
    if not names:
        return {
            "ok": False,
            "count": 0,
            "ping": ping,
            "error": "no Celery worker answered the ping",
        }
    return {"ok": True, "count": len(names), "workers": names, "ping": ping}


def check_workers_cached() -> dict[str, Any]:
    """``check_workers()``, reused for ``WORKER_PING_CACHE_SECS`` per broker; the answer says
    when its ping ran (``checked_at``) and how old it is (``age_s``)."""
    broker = settings.CELERY_BROKER_URL
    with _worker_ping_lock:
        if _worker_ping.get("broker") != broker:
            _worker_ping.clear()
        at = _worker_ping.get("at")
        now = time.monotonic()
        if at is None or now - at >= WORKER_PING_CACHE_SECS:
            full_at = _worker_ping.get("full_at")
            known = _worker_ping.get("result", {}).get("count", 0)
            recent = full_at is not None and now - full_at < FULL_PING_SECS
            result = check_workers(known if recent and known else None)
            checked_at = timezone.now().isoformat(timespec="milliseconds")
            if result.get("ping") != "known workers":
                full_at = time.monotonic()
            _worker_ping.update(
                at=time.monotonic(),
                full_at=full_at,
                broker=broker,
                result={**result, "checked_at": checked_at},
            )
        age = round(time.monotonic() - _worker_ping["at"], 1)
        return {**_worker_ping["result"], "age_s": age}


def forget_worker_ping() -> None:
    with _worker_ping_lock:
        _worker_ping.clear()


def check_models() -> dict[str, Any]:
    try:
        from llm.health import model_status
    except ImportError:
        return {"embedding": {"loaded": False, "error": "model layer not installed"}}
    try:
        return dict(model_status())
    except Exception as error:
        return {"embedding": {"loaded": False, "error": f"{type(error).__name__}: {error}"}}


def check_replicas() -> dict[str, Any]:
    """``{"replicas": ...}`` when read replicas are configured (docs/operators/replicas.md):
    reported, not required (searches read the primary without them)."""
    from search.retrieval.replicas import replica_aliases, replica_health

    if not replica_aliases():
        return {}
    try:
        return {"replicas": replica_health()}
    except Exception as error:
        return {"replicas": {"error": f"{type(error).__name__}: {error}"}}


def health_report() -> tuple[bool, dict[str, Any]]:
    started = time.monotonic()
    database = check_database()
    broker = check_broker()
    if broker["ok"]:
        workers = check_workers_cached()
    else:
        forget_worker_ping()  # the next answer after the broker is back is a fresh ping
        workers = {"ok": False, "count": 0, "error": "broker down"}
    report: dict[str, Any] = {
        "database": database,
        "broker": broker,
        "workers": workers,
        "models": check_models(),
    }
    if database["ok"]:
        report.update(check_replicas())
    down = [name for name in ("database", "broker", "workers") if not report[name]["ok"]]
    report["status"] = "ok" if not down else "unavailable"
    report["down"] = down
    report["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return not down, report


def signed_in(request: Request) -> bool:
    """Whether the request comes from an account (session or a usable bearer token). A bad
    token makes it anonymous here instead of a 401: health stays open to orchestrators."""
    from django.contrib.auth import get_user

    from accounts.authentication import token_from_header

    try:  # with the database down neither can be checked: anonymous
        # From the session itself: with no authentication classes DRF has already replaced
        # request.user (and the Django request's) with an anonymous user.
        user = get_user(request._request)
        if user.is_authenticated:
            return True
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return False
        token_from_header(header)
    except Exception:
        return False
    return True


class HealthView(APIView):
    """Readiness of the database, broker, workers and models. Without an account the answer says
    only ``ok`` or which parts are down; versions and details need one."""

    authentication_classes: list[type] = []
    permission_classes: list[type] = []
    query_parameters = None  # not checked: probes and monitors may add a cache-buster

    @extend_schema(responses={200: dict, 503: dict})
    def get(self, request: Request) -> Response:
        ok, report = health_report()
        if not signed_in(request):
            report = {"status": report["status"], "down": report["down"]}
        return Response(report, status=200 if ok else 503)
