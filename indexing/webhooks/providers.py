"""How each git host signs a webhook delivery and says what was pushed.

- GitHub: ``X-GitHub-Event`` (``push``, ``ping``), ``X-Hub-Signature-256: sha256=<hex>``, the
  HMAC-SHA256 of the raw body keyed by the secret; push body ``ref``, ``after``.
- GitLab: ``X-Gitlab-Event`` (``Push Hook``), ``X-Gitlab-Token``: the secret itself; push body
  ``ref``, ``after`` (``checkout_sha`` as well).
- Gitea / Forgejo: ``X-Gitea-Event`` / ``X-Forgejo-Event``, ``X-Gitea-Signature`` /
  ``X-Forgejo-Signature``: the bare hex HMAC-SHA256 of the body; push body as GitHub's. (They
  also send GitHub's headers; their own are checked first.)
- Bitbucket Cloud: ``X-Event-Key`` (``repo:push``; ``diagnostics:ping`` is a test),
  ``X-Hub-Signature: sha256=<hex>``; push body ``push.changes[].new`` (``type`` ``branch``,
  ``name``, ``target.hash``; ``new`` is null when the branch was deleted).

Every comparison is ``hmac.compare_digest``. A body may be JSON or, for GitHub and Gitea,
form-encoded with the JSON in ``payload``; the signature is always over the raw bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from reposearch.domain_errors import DomainError

ZERO_SHA = "0" * 40
# The same words whether the repository exists or not: an anonymous caller learns nothing.
NO_MATCH = "the signature or token does not match the secret of a repository with this id"


class WebhookRejected(DomainError):
    """A delivery that is not accepted; ``code`` and ``message`` for the one error shape."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


class BadSignature(WebhookRejected):
    """The signature or token is missing or does not match the repository's secret."""

    http_status = HTTPStatus.UNAUTHORIZED


class UnreadableDelivery(WebhookRejected):
    """The body or the headers are not a delivery any supported provider sends."""


@dataclass(frozen=True)
class Push:
    branch: str  # "" when the ref is not a branch (a tag)
    after: str  # the new tip; ZERO_SHA when the branch was deleted
    ref: str


@dataclass(frozen=True)
class Delivery:
    provider: str  # github, gitlab, gitea, forgejo, bitbucket
    event: str
    ping: bool
    pushes: tuple[Push, ...]  # empty for events other than pushes


def _header(headers: Mapping[str, str], name: str) -> str:
    return headers.get(name, "").strip()


def _hmac_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _check_hex(given: str, secret: str, body: bytes, *, prefix: str) -> None:
    if not given:
        raise BadSignature("missing_signature", "the delivery is not signed")
    if prefix:
        if not given.startswith(prefix):
            raise BadSignature("bad_signature", f"the signature does not start with {prefix!r}")
        given = given[len(prefix) :]
    if not hmac.compare_digest(
        given.lower().encode("ascii", "replace"), _hmac_hex(secret, body).encode()
    ):
        raise BadSignature("bad_signature", NO_MATCH)


def _check_token(given: str, secret: str) -> None:
    if not given:
        raise BadSignature("missing_signature", "the delivery carries no X-Gitlab-Token")
    if not hmac.compare_digest(given.encode("utf-8", "replace"), secret.encode("utf-8")):
        raise BadSignature("bad_signature", NO_MATCH)


def _payload(body: bytes, content_type: str) -> dict[str, Any]:
    try:
        if "x-www-form-urlencoded" in content_type:
            values = parse_qs(body.decode("utf-8"), strict_parsing=False).get("payload") or [""]
            data = json.loads(values[0])
        else:
            data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        # RecursionError: JSON nested past Python's limit (a form's payload escapes the request
        # guard's depth check, which reads JSON bodies only).
        raise UnreadableDelivery("invalid", "the body is not a JSON webhook payload") from None
    if not isinstance(data, dict):
        raise UnreadableDelivery("invalid", "the webhook payload is not a JSON object")
    return data


def _ref_push(data: Mapping[str, Any]) -> Push:
    ref, after = data.get("ref"), data.get("after")
    if not isinstance(ref, str) or not isinstance(after, str):
        raise UnreadableDelivery("invalid", "a push payload needs the string fields ref and after")
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else ""
    return Push(branch=branch, after=after.lower(), ref=ref)


def _bitbucket_pushes(data: Mapping[str, Any]) -> tuple[Push, ...]:
    changes = (
        (data.get("push") or {}).get("changes") if isinstance(data.get("push"), dict) else None
    )
    if not isinstance(changes, list):
        raise UnreadableDelivery("invalid", "a repo:push payload needs push.changes")
    pushes = []
    for change in changes:
        if not isinstance(change, dict):
            continue
        new, old = change.get("new"), change.get("old")
        side = new if isinstance(new, dict) else old if isinstance(old, dict) else None
        if side is None or side.get("type") != "branch" or not isinstance(side.get("name"), str):
            continue
        target = new.get("target") if isinstance(new, dict) else None
        after = target.get("hash") if isinstance(target, dict) else None
        name = side["name"]
        pushes.append(
            Push(
                branch=name,
                after=after.lower() if isinstance(after, str) else ZERO_SHA,
                ref=f"refs/heads/{name}",
            )
        )
    return tuple(pushes)


def read_delivery(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: str
) -> Delivery:
    """Verify the delivery against ``secret`` and read it. ``headers`` are looked up by their
    canonical names (``X-GitHub-Event`` ...), case-insensitively (Django's ``request.headers``).

    Raises ``BadSignature`` before anything of the body is read, ``UnreadableDelivery`` for a
    body or provider we cannot read."""
    for provider, event_header, signature_header in (
        ("forgejo", "X-Forgejo-Event", "X-Forgejo-Signature"),
        ("gitea", "X-Gitea-Event", "X-Gitea-Signature"),
    ):
        pushes: tuple[Push, ...]
        event = _header(headers, event_header)
        if event:
            _check_hex(_header(headers, signature_header), secret, body, prefix="")
            data = _payload(body, content_type)
            pushes = (_ref_push(data),) if event == "push" else ()
            return Delivery(provider, event, ping=False, pushes=pushes)
    event = _header(headers, "X-Gitlab-Event")
    if event:
        _check_token(_header(headers, "X-Gitlab-Token"), secret)
        data = _payload(body, content_type)
        pushes = (_ref_push(data),) if event == "Push Hook" else ()
        return Delivery("gitlab", event, ping=False, pushes=pushes)
    event = _header(headers, "X-Event-Key")
    if event:
        _check_hex(_header(headers, "X-Hub-Signature"), secret, body, prefix="sha256=")
        data = _payload(body, content_type)
        pushes = _bitbucket_pushes(data) if event == "repo:push" else ()
        return Delivery("bitbucket", event, ping=event == "diagnostics:ping", pushes=pushes)
    event = _header(headers, "X-GitHub-Event")
    if event:
        _check_hex(_header(headers, "X-Hub-Signature-256"), secret, body, prefix="sha256=")
        data = _payload(body, content_type)
        pushes = (_ref_push(data),) if event == "push" else ()
        return Delivery("github", event, ping=event == "ping", pushes=pushes)
    raise BadSignature(
        "missing_signature",
        "the delivery carries no event header of a supported provider (X-GitHub-Event, "
        "X-Gitlab-Event, X-Gitea-Event, X-Forgejo-Event, X-Event-Key), so it is not signed",
    )
