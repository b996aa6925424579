"""URL map: the API under /api/, the admin, the OpenAPI schema and docs, the web UI."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.request import Request
from rest_framework.response import Response

from reposearch.health import HealthView


class SchemaView(SpectacularAPIView):
    """The OpenAPI document itself; left out of the operations it lists."""

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/health", HealthView.as_view(), name="health"),
    path("api/schema", SchemaView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("accounts.urls")),
    path("api/", include("llm.urls")),
    path("api/", include("indexing.urls")),
    path("api/", include("search.urls")),
    path("api/", include("search.ask.urls")),
    path("oidc/", include("accounts.identity.urls")),  # OpenID Connect sign-in (docs/sign-in.md)
    path("", include("frontend.urls")),
]

handler400 = "reposearch.views.bad_request"
handler403 = "reposearch.views.permission_denied"
handler404 = "reposearch.views.not_found"
handler500 = "reposearch.views.server_error"
