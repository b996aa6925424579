"""A verified push delivery becomes a re-index of the repository, or a reason why not.

Only a push to the indexed branch queues anything, and through the same path as polling
(``indexing.services.polling.note_remote_tip``): a tip already indexed queues nothing, and a
delivery during a run is coalesced into it. A signed push seen before (its body or its delivery
id, ``indexing.webhooks.replays``) is answered ``replayed`` and queues nothing at all.

A delivery for a repository that does not exist is checked against a secret nobody has, so it
is refused exactly like an unsigned or wrongly signed one for a repository that does: the
answer never tells an anonymous caller which repositories exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from django.db import transaction
from django.utils import timezone

from indexing.models import IndexedBranch, Repository, new_webhook_secret
from indexing.services.branch_freshness import note_branch_tip
from indexing.services.polling import note_remote_tip
from indexing.webhooks.providers import (
    NO_MATCH,
    ZERO_SHA,
    BadSignature,
    Delivery,
    UnreadableDelivery,
    read_delivery,
)
from indexing.webhooks.replays import delivery_keys, first_time, forget

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class DeliveryResult:
    status: str  # pong, queued, coalesced, up_to_date, ignored, replayed
    provider: str
    event: str
    reason: str = ""
    branch: str = ""
    commit: str = ""
    job_id: int | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def receive_delivery(
    repository: Repository | None, headers: Mapping[str, str], body: bytes, content_type: str
) -> DeliveryResult:
    """Verify a delivery with the repository's secret and act on it (``None``: no such
    repository, refused as a bad signature is).

    Raises ``BadSignature`` (nothing was read or queued) and ``UnreadableDelivery``."""
    secret = repository.webhook_secret if repository is not None else new_webhook_secret()
    delivery = read_delivery(headers, body, content_type, secret)
    if repository is None:  # unreachable: nobody signs with a secret made just now
        raise BadSignature("bad_signature", NO_MATCH)
    if not delivery.pushes:
        return _act(repository, delivery)
    keys = delivery_keys(repository.pk, delivery.provider, headers, body)
    seen = first_time(keys)
    if seen is not None:
        return DeliveryResult(
            "replayed",
            delivery.provider,
            delivery.event,
            reason=f"this delivery was received already ({seen}); nothing was queued again",
        )
    try:
        return _act(repository, delivery)
    except Exception:
        forget(keys)  # not acted on: the host's retry must count
        raise


def _act(repository: Repository, delivery: Delivery) -> DeliveryResult:
    provider, event = delivery.provider, delivery.event
    if delivery.ping:
        return DeliveryResult("pong", provider, event, reason="the webhook is set up")
    if not delivery.pushes:
        return DeliveryResult("ignored", provider, event, reason=f"{event!r} is not a push event")
    wanted = repository.branch
    if not wanted:
        return DeliveryResult(
            "ignored",
            provider,
            event,
            reason="the repository's branch is not known before its first fetch; "
            "its first index runs anyway",
        )
    pushes = [push for push in delivery.pushes if push.branch and push.branch == wanted]
    others = {b.name: b for b in repository.indexed_branches.filter(generation__gt=0)}
    if not pushes and any(push.branch in others for push in delivery.pushes):
        return _branch_push(repository, delivery, others)
    if not pushes:
        pushed = ", ".join(push.ref for push in delivery.pushes) or "no branch"
        indexed = ", ".join(repr(name) for name in [wanted, *others])
        return DeliveryResult(
            "ignored",
            provider,
            event,
            reason=f"the push is to {pushed}; this repository indexes the branch"
            f"{'es' if others else ''} {indexed}",
        )
    push = pushes[-1]
    if push.after == ZERO_SHA:
        Repository.objects.filter(pk=repository.pk).update(
            remote_tip="",
            poll_error=f"branch {wanted!r} was deleted upstream ({provider} webhook); the index "
            f"of {repository.last_indexed_commit[:12]} is kept",
            last_polled_at=timezone.now(),
        )
        return DeliveryResult(
            "ignored", provider, event, reason="the branch was deleted upstream", branch=wanted
        )
    if not _SHA.match(push.after):
        raise UnreadableDelivery("invalid", "after is not a commit id", {"field": "after"})
    outcome = note_remote_tip(repository, push.after, source=f"{provider} webhook")
    if outcome.job_id is None:
        status = "up_to_date" if not outcome.moved else "ignored"
        return DeliveryResult(status, provider, event, outcome.reason, wanted, push.after)
    return DeliveryResult(
        "coalesced" if outcome.coalesced else "queued",
        provider,
        event,
        reason="a re-index was running: this push is fetched by it"
        if outcome.coalesced
        else "an incremental re-index was queued",
        branch=wanted,
        commit=push.after,
        job_id=outcome.job_id,
    )


def _branch_push(
    repository: Repository, delivery: Delivery, indexed: Mapping[str, IndexedBranch]
) -> DeliveryResult:
    """A push to a branch indexed beside the default one: re-index that branch."""
    provider, event = delivery.provider, delivery.event
    push = [push for push in delivery.pushes if push.branch in indexed][-1]
    branch = indexed[push.branch]
    if push.after == ZERO_SHA:
        IndexedBranch.objects.filter(pk=branch.pk).update(
            remote_tip="",
            error=f"branch {branch.name!r} was deleted upstream ({provider} webhook); the index "
            f"of {branch.last_indexed_commit[:12]} is kept",
        )
        return DeliveryResult(
            "ignored", provider, event, reason="the branch was deleted upstream", branch=branch.name
        )
    if not _SHA.match(push.after):
        raise UnreadableDelivery("invalid", "after is not a commit id", {"field": "after"})
    outcome = note_branch_tip(repository, branch, push.after, source=f"{provider} webhook")
    if outcome.job_id is None:
        status = "up_to_date" if not outcome.moved else "ignored"
        return DeliveryResult(status, provider, event, outcome.reason, branch.name, push.after)
    return DeliveryResult(
        "queued" if outcome.queued else "coalesced",
        provider,
        event,
        reason=outcome.reason,
        branch=branch.name,
        commit=push.after,
        job_id=outcome.job_id,
    )


def rotate_webhook_secret(repository: Repository) -> str:
    """Give the repository a new secret; deliveries signed with the old one are refused."""
    with transaction.atomic():
        repository.webhook_secret = new_webhook_secret()
        repository.save(update_fields=["webhook_secret", "updated_at"])
    return repository.webhook_secret
