"""Template filters about the signed-in account: ``{{ user|role_label }}``, ``user|may:"write"``."""

from __future__ import annotations

from typing import Any

from django import template

from accounts.roles import role_of
from frontend.access import may as _may

register = template.Library()


@register.filter
def role_label(user: Any) -> str:
    role = role_of(user)
    return role.label if role is not None else ""


@register.filter
def may(user: Any, role: str) -> bool:
    return _may(user, role)
