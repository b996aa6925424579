"""Signing in and out with a password: the UI's sign-in page and the admin's login, throttled.

Both use Django's ``LoginView`` (session, CSRF, ``next`` followed only to this site) with a form
that counts every attempt (``accounts.sign_in_throttle``: growing delays, no lock-out) before
checking the password; an attempt made too soon answers 429 with ``Retry-After`` and says why. Sign-out is a POST.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, LogoutView
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts import sign_in_throttle
from accounts.audit import client_address
from accounts.sign_in_throttle import SignInRefused


class ThrottledSignInForm(AuthenticationForm):
    """Django's sign-in form, refusing attempts made before their delay has passed."""

    refused: SignInRefused | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request) if self.request is not None else None
        if username and self.cleaned_data.get("password"):
            self.refused = sign_in_throttle.attempt(username, address)
            if self.refused is not None:
                raise ValidationError(self.refused.message, code="throttled")
        cleaned = super().clean()
        sign_in_throttle.succeeded(username, address)
        return cleaned


class ThrottledAdminSignInForm(ThrottledSignInForm, AdminAuthenticationForm):
    """The admin's form (staff only), with the same budget."""


def _refused_status(response: HttpResponse, form: AuthenticationForm) -> HttpResponse:
    refused = getattr(form, "refused", None)
    if refused is not None:
        response.status_code = 429
        response["Retry-After"] = str(refused.retry_after)
    return response


class SignInView(LoginView):
    template_name = "accounts/sign_in.html"
    authentication_form = ThrottledSignInForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["page"] = "sign-in"
        context["oidc_enabled"] = bool(getattr(settings, "REPO_SEARCH_OIDC_ENABLED", False))
        context["oidc_provider"] = getattr(
            settings, "REPO_SEARCH_OIDC_PROVIDER_NAME", "single sign-on"
        )
        return context

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        return _refused_status(super().form_invalid(form), form)


class SignOutView(LogoutView):
    """POST only (Django refuses a GET), so a link or an image cannot sign anyone out."""

    next_page = "sign-in"  # resolve_url takes URL names


class AdminSignInView(LoginView):
    """``AdminSite.login`` with the throttled admin form: the admin's template and context."""

    template_name = "admin/login.html"
    authentication_form = ThrottledAdminSignInForm
    next_page = "admin:index"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method == "GET" and admin.site.has_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        request.current_app = admin.site.name
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(admin.site.each_context(self.request))
        context.update(
            title=_("Log in"),
            subtitle=None,
            app_path=self.request.get_full_path(),
            username=self.request.user.get_username(),
        )
        if not context.get(REDIRECT_FIELD_NAME):
            context[REDIRECT_FIELD_NAME] = reverse("admin:index")
        return context

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        return _refused_status(super().form_invalid(form), form)
