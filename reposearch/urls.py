"""URL map: the API under /api/, the admin, the OpenAPI schema and docs, the web UI."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http.response import HttpResponseBase
from django.urls import include, path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.sign_in import AdminSignInView, SignInView, SignOutView
from reposearch.health import HealthView


class SchemaView(SpectacularAPIView):
    """The OpenAPI document itself; left out of the operations it lists."""

    query_parameters = frozenset({"lang", "version"})  # drf-spectacular's, beside ``format``

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)


class ApiDocsView(SpectacularSwaggerSplitView):
    """The schema's docs page (Swagger UI); it asks for its own script with ``?script=``. A
    visitor not signed in is sent to the sign-in page and back, as the UI's pages do (the page
    ``make up`` prints was a bare "401 Unauthorized")."""

    query_parameters = frozenset({"script"})

    # DRF types it Response; its finalize_response takes any HttpResponseBase (a redirect).
    def handle_exception(self, exc: Exception) -> HttpResponseBase:  # type: ignore[override]
        if isinstance(exc, NotAuthenticated) and "script" not in self.request.query_params:
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


urlpatterns = [
    path("admin/login/", AdminSignInView.as_view(), name="admin-sign-in"),  # throttled
    path("admin/", admin.site.urls),
    path("sign-in", SignInView.as_view(), name="sign-in"),
    path("sign-out", SignOutView.as_view(), name="sign-out"),
    path("api/health", HealthView.as_view(), name="health"),
    path("api/schema", SchemaView.as_view(), name="schema"),
    path(  # the split view serves its start-up script as a file: no inline script for the CSP
        "api/docs",
        ApiDocsView.as_view(url_name="schema", template_name="frontend/api_docs.html"),
        name="api-docs",
    ),
    path("api/", include("accounts.urls")),
    path("api/", include("llm.urls")),
    path("api/", include("indexing.urls")),
    path("api/", include("search.urls")),
    path("api/", include("search.ask.urls")),
    path("oidc/", include("accounts.identity.urls")),  # docs/operators/tls-and-sign-in.md
    path("", include("frontend.urls")),
]

handler400 = "reposearch.views.bad_request"
handler403 = "reposearch.views.permission_denied"
handler404 = "reposearch.views.not_found"
handler500 = "reposearch.views.server_error"
