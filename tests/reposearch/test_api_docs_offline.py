"""``/api/docs`` works without internet: Swagger UI comes from this server's static files."""

from __future__ import annotations

import re
import urllib.request

import pytest

from tests.accounts_support import bearer, make_account, token_for

HEADERS: dict[str, str] = {}


def fetch(url: str) -> tuple[int, bytes, str]:
    with urllib.request.urlopen(
        urllib.request.Request(url, headers=HEADERS), timeout=30
    ) as response:
        return response.status, response.read(), response.headers.get("Content-Type", "")


@pytest.mark.django_db
def test_the_docs_page_loads_only_local_assets_and_they_are_served(live_server) -> None:
    HEADERS.update(bearer(token_for(make_account("read"))))
    status, body, _ = fetch(f"{live_server.url}/api/docs")
    assert status == 200
    page = body.decode()
    assert 'id="swagger-ui"' in page
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page), "an external URL"
    assets = [url.replace("&amp;", "&") for url in re.findall(r'(?:src|href)="([^"]+)"', page)]
    assert any(asset.endswith("swagger-ui-bundle.js") for asset in assets)
    assert any(asset.endswith("swagger-ui.css") for asset in assets)
    for asset in assets:
        # Swagger UI from the sidecar; the page's rules and its start-up script (no inline
        # code, for the Content-Security-Policy) from this site too.
        assert asset.startswith(
            ("/static/drf_spectacular_sidecar/", "/static/frontend/", "/api/docs?")
        ), asset
        asset_status, content, _type = fetch(f"{live_server.url}{asset}")
        assert asset_status == 200 and len(content) > 100, asset
    bundle = next(asset for asset in assets if asset.endswith("swagger-ui-bundle.js"))
    assert b"SwaggerUIBundle" in fetch(f"{live_server.url}{bundle}")[1]
    # The schema it loads is served here too.
    assert b"openapi" in fetch(f"{live_server.url}/api/schema")[1]


@pytest.mark.django_db
def test_a_visitor_not_signed_in_is_sent_to_sign_in_and_back() -> None:
    from django.test import Client

    response = Client().get("/api/docs")
    assert response.status_code == 302
    assert response["Location"] == "/sign-in?next=/api/docs"
    script = Client().get("/api/docs", {"script": ""})  # what the page fetches stays an API 401
    assert script.status_code == 401
