"""``/oidc/authenticate/`` and ``/oidc/callback/`` (names as mozilla-django-oidc expects)."""

from __future__ import annotations

from django.urls import path

from accounts.identity.oidc_views import CallbackView, SignInView

urlpatterns = [
    path("authenticate/", SignInView.as_view(), name="oidc_authentication_init"),
    path("callback/", CallbackView.as_view(), name="oidc_authentication_callback"),
]
