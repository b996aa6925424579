"""The Locate page: paste an issue, see the files to change with their functions, reasons and
links to the file view; what a reader may not see never shows; bad input is said on the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.accounts.visibility_corpus import corpus, leaks  # noqa: F401 - fixture
from tests.frontend.signed_in import ui_client
from tests.search.test_localize import SHOP, TRACEBACK_ISSUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(settings: Any, tmp_path: Any) -> Any:
    from tests.factories import indexed_repository

    settings.REPO_SEARCH_DATA_DIR = tmp_path
    return indexed_repository("acme/shop", SHOP, clone=True, embed=True)


def test_the_page_lists_ranked_files_with_functions_reasons_and_links(shop: Any) -> None:
    client = ui_client("read")
    form = client.get("/locate/")
    assert form.status_code == 200 and b'name="issue"' in form.content
    assert b'aria-current="page">Locate</a>' in form.content
    page = client.post("/locate/", {"issue": TRACEBACK_ISSUE})
    assert page.status_code == 200
    html = page.content.decode()
    files = re.findall(r'class="file-link" href="([^"]+)">([^<]+)</a>', html)
    assert [path for _, path in files][:2] == ["src/shop/pool.py", "src/shop/http.py"]
    assert "stack frame at line 8 in `acquire`" in html
    function_link = re.search(r'<a href="([^"]+)"><code class="symbol">Pool.acquire</code>', html)
    assert function_link and function_link.group(1).endswith("/src/shop/pool.py#L5-L9")
    opened = client.get(function_link.group(1).split("#")[0])
    assert opened.status_code == 200 and b"PoolExhausted" in opened.content
    assert TRACEBACK_ISSUE.splitlines()[0] in html  # the issue stays in the box


@pytest.mark.parametrize(
    ("issue", "status", "message"),
    [
        ("   ", 400, "Paste an issue or a stack trace"),
        ("x" * 20_001, 413, "the limit is 20,000"),
        ("ValueError: no free connection\x00 left in the pool", 200, "src/shop/pool.py"),
    ],
)
def test_bad_input_is_said_on_the_page_and_never_fails_it(
    shop: Any, issue: str, status: int, message: str
) -> None:
    page = ui_client("read").post("/locate/", {"issue": issue})
    assert page.status_code == status and message in page.content.decode()


def test_a_reader_sees_nothing_of_a_restricted_repository(corpus: Any) -> None:  # noqa: F811
    issue = "`zanzibar_quokka_token` returns the wrong token for the connection pool"
    outsider = ui_client(user=corpus.outsider)
    page = outsider.post("/locate/", {"issue": issue}).content.decode()
    assert "src/pool.py" in page and leaks(page.replace(issue, ""), corpus.vault) == []
    # Asking for the restricted repository by its id is "no such repository".
    refused = outsider.post("/locate/", {"issue": issue, "repo": str(corpus.vault.pk)})
    assert refused.status_code == 404 and b"No such repository" in refused.content
    member = ui_client(user=corpus.member).post("/locate/", {"issue": issue}).content.decode()
    assert "src/vault.py" in member


def test_anonymous_visitors_are_sent_to_sign_in(db: Any) -> None:
    response = Client().get("/locate/")
    assert response.status_code == 302 and "/sign-in" in response["Location"]
