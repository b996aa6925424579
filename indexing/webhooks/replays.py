"""Replayed deliveries queue nothing: each signed delivery is remembered for a window.

A delivery is the same when its body is (the signature covers the body, so a replay cannot
change it without the secret) or when its host's delivery id is (``X-GitHub-Delivery``,
``X-Gitea-Delivery``, ``X-Forgejo-Delivery``, ``X-Gitlab-Event-UUID``, Bitbucket's
``X-Request-UUID``; a host's own retry keeps it). Remembered in Django's cache (Redis) for
``REPO_SEARCH_WEBHOOK_REPLAY_WINDOW_SECS``, per repository, only once the signature checked
out; forgotten again when acting on it failed, so the host's retry is not lost. With the cache
down every delivery counts as new: the index converges either way, only work is repeated.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

logger = logging.getLogger(__name__)

DELIVERY_ID_HEADERS = {
    "github": "X-GitHub-Delivery",
    "gitea": "X-Gitea-Delivery",
    "forgejo": "X-Forgejo-Delivery",
    "gitlab": "X-Gitlab-Event-UUID",
    "bitbucket": "X-Request-UUID",
}


def _digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def delivery_keys(
    repository_id: UUID, provider: str, headers: Mapping[str, str], body: bytes
) -> list[str]:
    """The cache keys a delivery is remembered by: its body, and its delivery id if sent."""
    keys = [f"webhook:seen:{repository_id}:body:{_digest(body)}"]
    delivery_id = headers.get(DELIVERY_ID_HEADERS.get(provider, ""), "").strip()
    if delivery_id:
        keys.append(f"webhook:seen:{repository_id}:{provider}:{_digest(delivery_id.encode())}")
    return keys


def first_time(keys: list[str]) -> str | None:
    """Remember the delivery; None when it is new, else when it was first seen (ISO 8601)."""
    now = timezone.now().isoformat(timespec="seconds")
    window = settings.REPO_SEARCH_WEBHOOK_REPLAY_WINDOW_SECS
    try:
        added = [cache.add(key, now, timeout=window) for key in keys]
        if all(added):
            return None
        seen = [cache.get(key) for key, fresh in zip(keys, added, strict=True) if not fresh]
    except Exception as error:  # the cache down: act on it, as before replays were remembered
        logger.warning("webhook replay check skipped: %s", type(error).__name__)
        return None
    return str(next((when for when in seen if when), "earlier"))


def forget(keys: list[str]) -> None:
    try:
        cache.delete_many(keys)
    except Exception as error:
        logger.warning("webhook delivery not forgotten: %s", type(error).__name__)
