"""The audit log: who changed what, when, from where, and how it ended.

``record`` appends one row; it never raises (a write that happened must not turn into an error
because its audit row could not be written — that failure is logged instead). ``AuditedWrites``
is a mixin for API views: every request whose method the view names in ``audit_actions`` is
recorded with its outcome (2xx ok, 401/403/4xx refused, 5xx failed), so refused attempts are
on record too. Actors are named by user name and token name, never by secret.
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import ApiToken, AuditEntry, AuditOutcome

logger = logging.getLogger(__name__)


def record(
    action: str,
    *,
    user: Any = None,
    token: ApiToken | None = None,
    address: str | None = None,
    target: str = "",
    outcome: str = AuditOutcome.OK,
    details: dict[str, Any] | None = None,
) -> AuditEntry | None:
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    try:
        return AuditEntry.objects.create(
            actor=user.get_username() if authenticated else "",
            actor_id=user.pk if authenticated else None,
            token_name=token.name if token is not None else "",
            action=action,
            target=str(target)[:300],
            address=address or None,
            outcome=outcome,
            details=details or {},
        )
    except Exception:
        logger.exception("could not write the audit entry for %s %s", action, target)
        return None


def client_address(request: Any) -> str | None:
    address = request.META.get("REMOTE_ADDR") or None
    return str(address) if address else None


def record_request(
    request: Request,
    action: str,
    *,
    target: str = "",
    outcome: str = AuditOutcome.OK,
    details: dict[str, Any] | None = None,
) -> AuditEntry | None:
    # What authentication settled on; nothing when it failed (a bad token, the database down):
    # reading request.user / request.auth then would run authentication again.
    user = request.__dict__.get("_user")
    auth = request.__dict__.get("_auth")
    return record(
        action,
        user=user,
        token=auth if isinstance(auth, ApiToken) else None,
        address=client_address(request),
        target=target,
        outcome=outcome,
        details=details,
    )


def outcome_of(status_code: int) -> str:
    if status_code < 400:
        return AuditOutcome.OK
    return AuditOutcome.FAILED if status_code >= 500 else AuditOutcome.REFUSED


class AuditedWrites:
    """API view mixin: record each request of an audited method with its outcome."""

    audit_actions: dict[str, str] = {}

    def audit_target(self, request: Request, response: Response, kwargs: dict[str, Any]) -> str:
        for key in ("repository_id", "token_id", "job_id"):
            if key in kwargs:
                return str(kwargs[key])
        data = response.data if isinstance(response.data, dict) else {}
        return str(data.get("id") or data.get("name") or "")

    def audit_details(self, request: Request, response: Response) -> dict[str, Any]:
        details: dict[str, Any] = {"status": response.status_code}
        data = response.data if isinstance(response.data, dict) else {}
        if isinstance(data.get("name"), str) and response.status_code < 400:
            details["name"] = data["name"]
        error = data.get("error")
        if isinstance(error, dict):
            details["error"] = str(error.get("code", ""))
            details["message"] = str(error.get("message", ""))[:500]
        details.update(getattr(request, "audit_details", {}))
        return details

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        action = self.audit_actions.get(request.method or "")
        # A view that records some outcomes in aggregate (webhook refusals) sets this.
        if action and not getattr(request, "audited_elsewhere", False):
            record_request(
                request,
                action,
                target=self.audit_target(request, response, kwargs),
                outcome=outcome_of(response.status_code),
                details=self.audit_details(request, response),
            )
        return response
