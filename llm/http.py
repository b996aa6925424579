"""HTTP to model servers: one pooled ``httpx.Client`` per process, bounded retries.

Every call has an overall deadline (the caller's timeout): connect/read timeouts are clipped to
what is left of it, and a retry whose back-off would pass it is not attempted. Retried:
connection errors, connect timeouts, 429 (honouring ``Retry-After``, capped) and 5xx. Not
retried: a read timeout (a slow model stays slow; waiting again would double the wait) and
other 4xx answers. The API key travels only in the ``Authorization`` header; no message or log
line ever contains it.
"""

from __future__ import annotations

import email.utils
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from llm.errors import ModelResponseError, ModelUnavailable, display_url, redact

logger = logging.getLogger(__name__)

BACKOFF_BASE_SECS = 0.25
BACKOFF_MAX_SECS = 4.0
RETRY_AFTER_CAP_SECS = 10.0

# Indirections so tests can count sleeps and control the clock instead of waiting.
sleep = time.sleep
monotonic = time.monotonic

_client: httpx.Client | None = None
_client_pid: int | None = None
_client_lock = threading.Lock()


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach one model server."""

    provider: str
    base_url: str
    api_key: str | None = None
    connect_timeout: float = 3.0
    read_timeout: float = 30.0
    max_retries: int = 2

    def __repr__(self) -> str:  # never show the key, even in a traceback's locals
        key = "set" if self.api_key else "none"
        return f"Endpoint({self.provider}, {display_url(self.base_url)}, api_key={key})"

    def url(self, path: str) -> str:
        """The request URL, without any ``user:password@`` (sent as basic auth instead:
        httpx logs URLs)."""
        return display_url(self.base_url).rstrip("/") + path

    def basic_auth(self) -> tuple[str, str] | None:
        parts = urlsplit(self.base_url)
        if parts.username is None and parts.password is None:
            return None
        return unquote(parts.username or ""), unquote(parts.password or "")


def get_client() -> httpx.Client:
    """The process's shared client, created lazily and again in a forked child."""
    global _client, _client_pid
    pid = os.getpid()
    if _client is None or _client_pid != pid:
        with _client_lock:
            if _client is None or _client_pid != pid:
                # A client inherited through fork shares its sockets with the parent: drop it
                # without closing (closing would tear down the parent's connections).
                _client = httpx.Client(
                    limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
                    follow_redirects=False,
                )
                _client_pid = pid
    return _client


def gave_up_after(attempts: int) -> str:
    """How a failed call ends its message: "gave up after 3 attempts", "1 attempt" (no retries)."""
    return f"gave up after {attempts} attempt{'' if attempts == 1 else 's'}"


def retry_after_secs(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header as seconds (delta or HTTP date), or None."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _excerpt(response: httpx.Response, endpoint: Endpoint) -> str:
    try:
        body = response.text
    except Exception:  # undecodable body
        return ""
    try:
        data = response.json()
        if isinstance(data, dict):
            err = data.get("error")
            if isinstance(err, dict):
                body = str(err.get("message") or err)
            elif err:
                body = str(err)
    except ValueError:
        pass
    body = " ".join(body.split())[:200]
    auth = endpoint.basic_auth()
    return redact(body, [endpoint.api_key, auth[1] if auth else None])


def request_json(
    endpoint: Endpoint,
    method: str,
    path: str,
    payload: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,
) -> Any:
    """Send a request and return the decoded JSON body, retrying transient failures.

    ``timeout`` bounds the whole call, retries and back-off included (default: the
    endpoint's read timeout).
    """
    total = float(timeout if timeout is not None else endpoint.read_timeout)
    deadline = monotonic() + total
    url = endpoint.url(path)
    headers = {"Accept": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    auth = endpoint.basic_auth()
    err_kw: dict[str, Any] = {"provider": endpoint.provider, "base_url": endpoint.base_url}
    attempt = 0
    while True:
        remaining = deadline - monotonic()
        if remaining <= 0:
            raise ModelUnavailable(f"no answer within {total:g}s", **err_kw)
        limits = httpx.Timeout(
            connect=min(endpoint.connect_timeout, remaining),
            read=min(endpoint.read_timeout, remaining),
            write=min(endpoint.read_timeout, remaining),
            pool=min(endpoint.connect_timeout, remaining),
        )
        wait: float | None = None
        try:
            response = get_client().request(
                method, url, json=payload, headers=headers, timeout=limits, auth=auth
            )
        except httpx.ReadTimeout:
            raise ModelUnavailable(
                f"no answer within {min(endpoint.read_timeout, remaining):.3g}s (read timeout)",
                **err_kw,
            ) from None
        except httpx.TimeoutException:
            problem = "connection timed out"
        except httpx.TransportError as exc:
            problem = f"connection failed ({type(exc).__name__})"
        else:
            status = response.status_code
            if status < 400:
                try:
                    return response.json()
                except ValueError:
                    raise ModelResponseError(
                        f"answered {path} with invalid JSON", status=status, **err_kw
                    ) from None
            if status != 429 and status < 500:
                hint = " (check LLM_API_KEY)" if status in (401, 403) else ""
                raise ModelResponseError(
                    f"HTTP {status} from {path}{hint}: {_excerpt(response, endpoint)}",
                    status=status,
                    **err_kw,
                )
            problem = f"HTTP {status} from {path}: {_excerpt(response, endpoint)}"
            if status in (429, 503):
                wait = retry_after_secs(response)
        attempt += 1
        if attempt > endpoint.max_retries:
            raise ModelUnavailable(f"{problem} ({gave_up_after(attempt)})", **err_kw)
        if wait is None:
            wait = min(BACKOFF_MAX_SECS, BACKOFF_BASE_SECS * 2 ** (attempt - 1))
        wait = min(wait, RETRY_AFTER_CAP_SECS)
        if monotonic() + wait >= deadline:
            raise ModelUnavailable(
                f"{problem}; a retry in {wait:g}s would pass the {total:g}s timeout", **err_kw
            )
        logger.info(
            "model request to %s %s failed (%s); retry %d/%d in %.2fs",
            endpoint.provider,
            display_url(endpoint.base_url),
            problem,
            attempt,
            endpoint.max_retries,
            wait,
        )
        sleep(wait)
