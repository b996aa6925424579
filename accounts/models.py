"""Data of accounts: personal API tokens and the append-only audit log.

A token's secret is shown once; only its SHA-256 digest and a short prefix (for display) are
kept. A token made with another token names it as its ``parent``: it never outlives, outranks or
survives the revocation of it (``accounts.tokens``). Audit rows name their actor by user name and token name, not by foreign key, so deleting
an account never rewrites history; a database trigger (migration 0002) refuses every UPDATE and
DELETE of an audit row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class TokenScope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"
    ADMIN = "admin", "Admin"


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.READ)
    prefix = models.CharField(
        max_length=16, help_text="The secret's first characters, for display."
    )
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="children",
        help_text="The token that made this one; it is revoked with it.",
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.user})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and not self.is_expired


class AuditOutcome(models.TextChoices):
    OK = "ok", "Succeeded"
    REFUSED = "refused", "Refused"
    FAILED = "failed", "Failed"


class AuditEntry(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=150, blank=True, help_text="User name; empty: nobody.")
    actor_id = models.IntegerField(null=True, blank=True)
    token_name = models.CharField(max_length=100, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    target = models.CharField(max_length=300, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    outcome = models.CharField(max_length=8, choices=AuditOutcome.choices, default=AuditOutcome.OK)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"
        indexes = [models.Index(fields=["actor", "-at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor or '-'} {self.action} {self.target}"
