"""One git host's REST API: paged GETs with its token, honouring its rate limits.

The token goes only to the configured base URL: a next-page link to another scheme, host or
port is refused rather than followed, and redirects are not followed. Pages are followed by the
``Link: <...>; rel="next"`` header (GitHub, GitLab, Gitea), else GitLab's ``X-Next-Page``, else
by counting (a full page means there may be another).

Rate limits: a 403 or 429 with ``Retry-After`` (seconds or an HTTP date) or with
``X-RateLimit-Remaining: 0`` / ``RateLimit-Remaining: 0`` and a ``...-Reset`` epoch time is
waited out and asked again (at most ``max_wait_secs`` per wait); a page that used the last
request of the budget makes the next request wait for the reset too. 5xx and connection errors
are retried twice, then fail.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

MAX_PAGES = 1000
MAX_RATE_LIMIT_WAITS = 5
SERVER_ERROR_RETRIES = 2
RESET_MARGIN_SECS = 0.25


class ForgeError(Exception):
    """The listing failed; ``str()`` says why in a sentence an operator can act on."""


class ForgeNotFound(ForgeError):
    """The host answered 404: no such account (or one the token may not see)."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class ForgeClient:
    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        token_setting: str = "",
        has_token: bool = False,
        max_wait_secs: float = 900.0,
        timeout_secs: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        if _origin(self.base_url)[0] not in ("http", "https") or not _origin(self.base_url)[1]:
            raise ForgeError(f"--base-url {base_url!r} is not an http(s) URL")
        self.token_setting = token_setting
        self.has_token = has_token
        self.max_wait_secs = max_wait_secs
        self.sleep = sleep
        self.on_wait = on_wait or (lambda message: None)
        self.requests = 0
        self.pages = 0
        self._wait_until = 0.0
        self._http = httpx.Client(headers=headers, timeout=timeout_secs, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ForgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def paged(self, path: str, params: dict[str, Any], per_page_key: str) -> Iterator[list[Any]]:
        """Every page of a list endpoint, each a list of JSON objects."""
        url: str | None = self.base_url + path
        query: dict[str, Any] | None = dict(params)
        page = 1
        for _ in range(MAX_PAGES):
            assert url is not None
            response = self._get(url, query)
            try:
                items = response.json() if response.content else []
            except ValueError:
                raise ForgeError(f"{url.split('?')[0]} did not answer JSON") from None
            if not isinstance(items, list):
                raise ForgeError(
                    f"{url}: expected a JSON list of repositories, got {type(items).__name__}"
                )
            self.pages += 1
            yield items
            page += 1
            next_link = response.links.get("next", {}).get("url")
            next_page = response.headers.get("x-next-page")
            if next_link:
                if _origin(next_link) != _origin(self.base_url):
                    raise ForgeError(
                        f"the API's next page is on another server ({next_link[:200]}); not "
                        f"followed: the token is only sent to {self.base_url}"
                    )
                url, query = next_link, None
            elif next_page is not None:
                if not next_page.strip():
                    return
                url, query = self.base_url + path, {**params, "page": next_page.strip()}
            elif items and len(items) >= int(params.get(per_page_key, 0) or 0) > 0:
                url, query = self.base_url + path, {**params, "page": page}
            else:
                return
        raise ForgeError(f"stopped after {MAX_PAGES} pages of {self.base_url + path}")

    def _get(self, url: str, params: dict[str, Any] | None) -> httpx.Response:
        waits = errors = 0
        while True:
            self._respect_budget()
            self.requests += 1
            try:
                response = self._http.get(url, params=params)
            except httpx.HTTPError as error:
                errors += 1
                if errors > SERVER_ERROR_RETRIES:
                    raise ForgeError(f"cannot reach {self.base_url}: {error}") from None
                self.sleep(0.5 * errors)
                continue
            wait = _rate_limit_wait(response)
            if response.status_code in (403, 429) and wait is not None:
                waits += 1
                if waits > MAX_RATE_LIMIT_WAITS or wait > self.max_wait_secs:
                    raise ForgeError(
                        f"rate limited by {self.base_url}: it asks to wait {wait:.0f} s; "
                        "try again later (nothing was added)"
                    )
                self.on_wait(f"rate limited by {self.base_url}: waiting {wait:.1f} s")
                self.sleep(wait)
                continue
            if response.status_code >= 500:
                errors += 1
                if errors > SERVER_ERROR_RETRIES:
                    raise ForgeError(
                        f"{url.split('?')[0]} answered {response.status_code} "
                        f"{_message(response)}; nothing was added"
                    )
                self.sleep(0.5 * errors)
                continue
            self._note_budget(response, wait)
            if response.status_code == 401:
                setting = f"; check {self.token_setting}" if self.token_setting else ""
                raise ForgeError(
                    f"{self.base_url} refused the token (401 {_message(response)}){setting}"
                )
            if response.status_code == 404:
                raise ForgeNotFound(f"{url.split('?')[0]} was not found (404 {_message(response)})")
            if response.status_code != 200:
                raise ForgeError(
                    f"{url.split('?')[0]} answered {response.status_code} {_message(response)}"
                )
            return response

    def _respect_budget(self) -> None:
        delay = self._wait_until - time.time()
        if delay > 0:
            self.on_wait(f"the rate limit of {self.base_url} is used up: waiting {delay:.1f} s")
            self.sleep(delay)
        self._wait_until = 0.0

    def _note_budget(self, response: httpx.Response, wait: float | None) -> None:
        if wait is not None and wait <= self.max_wait_secs:
            self._wait_until = time.time() + wait


def _rate_limit_wait(response: httpx.Response) -> float | None:
    """Seconds the host asks us to wait before the next request, or None."""
    headers = response.headers
    retry_after = headers.get("retry-after")
    if retry_after:
        if retry_after.strip().isdigit():
            return float(retry_after.strip())
        try:
            when = email.utils.parsedate_to_datetime(retry_after)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(when.timestamp() - time.time(), 0.0) + RESET_MARGIN_SECS
    for prefix in ("x-ratelimit-", "ratelimit-"):
        remaining = headers.get(prefix + "remaining")
        reset = headers.get(prefix + "reset")
        if remaining is not None and remaining.strip() == "0" and reset and reset.strip().isdigit():
            return max(float(reset) - time.time(), 0.0) + RESET_MARGIN_SECS
    return None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip()
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or "")[:200]
    return ""
