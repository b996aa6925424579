"""Permalinks and browsing: ``/repos/<name>/-/blob/<commit>/<path>`` and ``/-/tree/<commit>/<dir>``
read from a real clone at that commit, names with ``/``, ``HEAD``, an older commit, bad input."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from dulwich.repo import Repo

from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.accounts_support import session_client
from tests.factories import Piece, SourceDoc, indexed_repository
from tests.indexing.git_server import commit_files

pytestmark = pytest.mark.django_db

FILES = [
    SourceDoc(
        "src/shop/cart.py",
        [
            Piece("def add_item(cart, item):\n    cart.append(item)", "add_item"),
            Piece("def total(cart):\n    return sum(cart)", "total", calls=["sum"]),
        ],
    ),
    SourceDoc("src/shop/__init__.py", [Piece("from .cart import add_item", "")]),
    SourceDoc("README.md", [Piece("# Shop\n\nA shop.", "Shop", kind="section")], "markdown"),
]


@pytest.fixture
def shop(settings: Any, tmp_path: Any) -> Iterator[Repository]:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = indexed_repository("acme/shop", FILES, clone=True)
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def page(client: Client, url: str) -> tuple[int, str]:
    response = client.get(url)
    return response.status_code, response.content.decode()


def test_a_blob_permalink_shows_the_file_at_the_commit_with_breadcrumbs(
    shop: Repository, client: Client
) -> None:
    commit = shop.last_indexed_commit
    url = f"/repos/acme/shop/-/blob/{commit}/src/shop/cart.py"
    status, html = page(client, url)
    assert status == 200
    assert 'id="L1"' in html and 'id="L4"' in html and "add_item" in html
    # Breadcrumbs up to the repository root, each a tree page at the same commit.
    assert f'href="/repos/acme/shop/-/tree/{commit}"' in html
    assert f'href="/repos/acme/shop/-/tree/{commit}/src"' in html
    assert f'href="/repos/acme/shop/-/tree/{commit}/src/shop"' in html
    assert f'data-permalink="{url}"' in html  # the copy button's address
    assert "data-navigable" in html  # the indexed commit: go to definition is offered


def test_head_means_the_indexed_commit_and_a_prefix_works_too(
    shop: Repository, client: Client
) -> None:
    commit = shop.last_indexed_commit
    for given in ("HEAD", commit[:10]):
        status, html = page(client, f"/repos/acme/shop/-/blob/{given}/src/shop/cart.py")
        assert status == 200 and f'title="{commit}"' in html
        assert f'data-permalink="/repos/acme/shop/-/blob/{commit}/src/shop/cart.py"' in html


def test_an_older_commit_in_the_clone_is_shown_as_it_was(shop: Repository, client: Client) -> None:
    indexed = shop.last_indexed_commit
    repo = Repo(str(repository_dir(shop.pk)))
    newer = commit_files(repo, {"src/shop/cart.py": "def add_item(cart, item):\n    pass\n"})
    repo.close()
    status, html = page(client, f"/repos/acme/shop/-/blob/{newer.decode()}/src/shop/cart.py")
    assert status == 200 and "pass" in html and "cart.append" not in html
    assert "not the indexed commit" in html and "data-navigable" not in html
    status, html = page(client, f"/repos/acme/shop/-/blob/{indexed}/src/shop/cart.py")
    assert status == 200 and "append" in html


@pytest.fixture
def branches(shop: Repository) -> dict[str, str]:
    """``shop`` on branch ``main`` (as its first fetch records it) with a newer commit fetched
    and not indexed, an indexed ``release/1.0`` whose tip moved on since, and two branches not
    indexed yet: ``next`` and ``main/src`` (a name that begins a path of ``main``)."""
    from indexing.models import IndexedBranch

    Repository.objects.filter(pk=shop.pk).update(branch="main")
    shop.refresh_from_db()
    repo = Repo(str(repository_dir(shop.pk)))
    commit_files(repo, {"src/shop/cart.py": "def add_item(cart, item):\n    pass\n"})
    release = commit_files(
        repo, {"src/shop/cart.py": "def add_item(cart, item):\n    cart.insert(0, item)\n"},
        branch="release/1.0",
    ).decode()  # fmt: skip
    commit_files(repo, {"src/shop/cart.py": "# newer\n"}, branch="release/1.0")
    repo.close()
    IndexedBranch.objects.create(
        repository=shop, name="release/1.0", generation=2, last_indexed_commit=release
    )
    IndexedBranch.objects.create(repository=shop, name="next", generation=0)
    IndexedBranch.objects.create(repository=shop, name="main/src", generation=0)
    return {"main": shop.last_indexed_commit, "release/1.0": release}


def test_a_branch_name_means_the_commit_it_was_indexed_at(
    branches: dict[str, str], client: Client
) -> None:
    """``/blob/main/...`` as a code host reads it: each branch is the commit search answers from
    (not the newer tips fetched since), a name with ``/`` runs into the path, and the page names
    the branch; the branch's commit typed in full or abbreviated names it too."""
    main, release = branches["main"], branches["release/1.0"]
    status, html = page(client, "/repos/acme/shop/-/blob/main/src/shop/cart.py")
    assert status == 200 and "append" in html and "pass" not in html
    assert f'data-permalink="/repos/acme/shop/-/blob/{main}/src/shop/cart.py"' in html
    assert ">main</span>" in html and "data-navigable" in html

    status, html = page(client, "/repos/acme/shop/-/blob/release/1.0/src/shop/cart.py")
    assert status == 200 and "insert" in html and "append" not in html and "newer" not in html
    assert f'data-permalink="/repos/acme/shop/-/blob/{release}/src/shop/cart.py"' in html
    assert ">release/1.0</span>" in html and "not the indexed commit" not in html
    status, html = page(client, "/repos/acme/shop/-/tree/release/1.0")
    assert status == 200 and f'href="/repos/acme/shop/-/tree/{release}/src"' in html
    for given in (release, release[:12]):  # as a search hit links to it; as the page shows it
        status, html = page(client, f"/repos/acme/shop/-/blob/{given}/src/shop/cart.py")
        assert status == 200 and ">release/1.0</span>" in html and "insert" in html

    status, html = page(client, "/repos/acme/shop/-/commits/release/1.0/src/shop/cart.py")
    assert status == 200 and release[:12] in html and main[:12] not in html
    response = client.get("/repos/acme/shop/blob/release/1.0/src/shop/cart.py")
    assert response["Location"] == "/repos/acme/shop/-/blob/release/1.0/src/shop/cart.py"


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/-/tree/next/src", 404, "Branch next of acme/shop is not indexed yet."),
        ("/-/blob/mian/src/shop/cart.py", 404, "“mian” is neither a commit nor an indexed"),
        ("/-/blob/mian/src/shop/cart.py", 404, "Did you mean main?"),
        ("/-/blob/release/2.0/src/shop/cart.py", 404, "Did you mean release/1.0?"),
        ("/-/blob/release/2.0/src/shop/cart.py", 404, "“release/2.0” is neither"),
        ("/-/tree/zzz", 404, "Its indexed branches: main, release/1.0."),
        ("/-/commits/release/1.0", 400, "History and blame are of a file or a directory"),
    ],
)
def test_a_branch_that_is_not_indexed_or_misspelt_is_refused_with_what_to_use(
    branches: dict[str, str], client: Client, url: str, status: int, message: str
) -> None:
    got, html = page(client, "/repos/acme/shop" + url)
    assert got == status and message in html, html[html.find("<main") :][:600]


def test_a_branch_not_indexed_yet_does_not_hide_a_path_of_an_indexed_one(
    branches: dict[str, str], client: Client
) -> None:
    """``main/src`` is listed but not indexed: ``/blob/main/src/...`` is still main's file."""
    status, html = page(client, "/repos/acme/shop/-/blob/main/src/shop/cart.py")
    assert status == 200 and "append" in html


def test_a_repository_on_its_first_index_says_so_for_its_branch(client: Client) -> None:
    Repository.objects.create(name="acme/new", url="https://example.com/acme/new.git")
    for commit in ("HEAD", "main"):
        status, html = page(client, f"/repos/acme/new/-/tree/{commit}")
        assert status == 404 and "acme/new has not finished indexing yet." in html


def test_a_tree_page_lists_directories_first_with_links_at_the_commit(
    shop: Repository, client: Client
) -> None:
    commit = shop.last_indexed_commit
    status, html = page(client, f"/repos/acme/shop/-/tree/{commit}")
    assert status == 200
    assert html.index(">src/</a>") < html.index(">README.md</a>")
    assert f'href="/repos/acme/shop/-/tree/{commit}/src"' in html
    assert f'href="/repos/acme/shop/-/blob/{commit}/README.md"' in html
    status, html = page(client, "/repos/acme/shop/-/tree/HEAD/src/shop")
    assert status == 200
    assert f'href="/repos/acme/shop/-/blob/{commit}/src/shop/cart.py"' in html
    assert f'href="/repos/acme/shop/-/tree/{commit}/src"' in html  # breadcrumb and ".."


def test_the_repository_address_and_mismatched_kinds_redirect(
    shop: Repository, client: Client
) -> None:
    commit = shop.last_indexed_commit
    response = client.get("/repos/acme/shop")
    assert response.status_code == 302
    assert response["Location"] == f"/repos/acme/shop/-/tree/{commit}"
    response = client.get(f"/repos/acme/shop/-/blob/{commit}/src")
    assert response["Location"] == f"/repos/acme/shop/-/tree/{commit}/src"
    response = client.get(f"/repos/acme/shop/-/tree/{commit}/README.md")
    assert response["Location"] == f"/repos/acme/shop/-/blob/{commit}/README.md"


def test_an_address_typed_without_the_separator_redirects_to_the_permalink(
    shop: Repository, client: Client
) -> None:
    """``/repos/acme/shop/blob/HEAD/...`` (as GitHub writes it) finds the repository before
    ``/blob/`` and redirects to the ``/-/`` permalink; a name nobody may see stays a 404."""
    commit = shop.last_indexed_commit
    response = client.get("/repos/acme/shop/blob/HEAD/src/shop/cart.py")
    assert response.status_code == 302
    assert response["Location"] == "/repos/acme/shop/-/blob/HEAD/src/shop/cart.py"
    status, html = page(client, response["Location"])
    assert status == 200 and "add_item" in html
    response = client.get(f"/repos/acme/shop/tree/{commit}/src")
    assert response["Location"] == f"/repos/acme/shop/-/tree/{commit}/src"
    for missing in ("/repos/acme/none/blob/HEAD/src/shop/cart.py", "/repos/acme/shop/blob/"):
        assert client.get(missing).status_code == 404, missing


def test_the_old_file_address_redirects_to_the_permalink_with_its_lines(
    shop: Repository, client: Client
) -> None:
    response = client.get(
        f"/repos/{shop.pk}/file", {"path": "src/shop/cart.py", "start": 3, "end": 4}
    )
    commit = shop.last_indexed_commit
    assert response.status_code == 302
    assert response["Location"] == f"/repos/acme/shop/-/blob/{commit}/src/shop/cart.py#L3-L4"


def test_an_id_addresses_the_repository_and_twins_get_their_id_in_links(
    shop: Repository, client: Client, settings: Any
) -> None:
    commit = shop.last_indexed_commit
    status, _ = page(client, f"/repos/{shop.pk}/-/blob/HEAD/src/shop/cart.py")
    assert status == 200
    twin = indexed_repository("acme/shop", FILES, clone=True)
    try:
        status, html = page(client, "/repos/acme/shop/-/blob/HEAD/src/shop/cart.py")
        assert status == 400 and str(shop.pk) in html and str(twin.pk) in html
        status, html = page(client, f"/repos/{shop.pk}/-/blob/HEAD/src/shop/cart.py")
        assert status == 200
        assert f'data-permalink="/repos/{shop.pk}/-/blob/{commit}/src/shop/cart.py"' in html
    finally:
        shutil.rmtree(repository_dir(twin.pk), ignore_errors=True)


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/repos/acme/nothing/-/blob/HEAD/src/shop/cart.py", 404),  # unknown repository
        ("/repos/acme/shop/-/blob/0123456789abcdef0123456789abcdef01234567/README.md", 404),
        ("/repos/acme/shop/-/blob/not-a-commit/README.md", 404),
        ("/repos/acme/shop/-/blob/HEAD/src/missing.py", 404),
        ("/repos/acme/shop/-/blob/HEAD/src/../README.md", 400),  # traversal
        ("/repos/acme/shop/-/blob/HEAD/src/%2e%2e/README.md", 400),
        ("/repos/acme/shop/-/blob/HEAD/src//cart.py", 400),
        ("/repos/acme/shop/-/tree/HEAD/nowhere", 404),
        ("/repos/acme/shop/-/tree/HEAD/../..", 400),
        ("/repos/acme/shop/-/blob/HEAD/src/%00cart.py", 400),  # NUL
        ("/repos/acme/shop/-/blob/HEAD/" + "a/" * 600 + "b.py", 404),  # very long
    ],
)
def test_bad_addresses_are_clear_pages_never_a_500(
    shop: Repository, client: Client, url: str, status: int
) -> None:
    response = client.get(url)
    assert response.status_code == status, (url, response.content[:300])
    assert b"<h1" in response.content  # the UI's own page, not Django's


def test_a_misspelt_repository_page_names_the_repository_meant(
    shop: Repository, client: Client
) -> None:
    response = client.get("/repos/acme/shp/-/tree/HEAD")
    assert response.status_code == 404
    assert "There is no repository with this name or id" in response.content.decode()
    assert "Did you mean acme/shop?" in response.content.decode()


def test_a_restricted_repository_is_no_repository_to_an_outsider(
    shop: Repository, client: Client
) -> None:
    from django.contrib.auth.models import Group

    from tests.accounts_support import make_account

    member = make_account("read", groups=["team-s"])
    shop.visible_to_groups.set([Group.objects.get(name="team-s")])
    outsider = session_client("read")
    for url in (
        "/repos/acme/shop/-/blob/HEAD/src/shop/cart.py",
        "/repos/acme/shop/-/tree/HEAD",
        f"/repos/{shop.pk}/-/tree/HEAD/src",
        "/repos/acme/shop",
        "/repos/acme/shop/blob/HEAD/src/shop/cart.py",
    ):
        hidden = outsider.get(url)
        missing = outsider.get(
            url.replace("acme/shop", "acme/none").replace(str(shop.pk), "acme/none")
        )
        assert hidden.status_code == missing.status_code == 404, url
        assert b"add_item" not in hidden.content and b"acme/shop" not in hidden.content
        assert session_client(user=member).get(url, follow=True).status_code == 200, url


@pytest.mark.parametrize(
    "name", ["odd/-/name", "trailing/", "00000000-0000-0000-0000-000000000001"]
)
def test_names_an_address_would_cut_short_link_by_id(client: Client, name: str) -> None:
    repository = indexed_repository(name, ["def f():\n    pass"])
    response = client.post(
        "/api/search", {"query": "sym:s0", "limit": 5}, content_type="application/json"
    )
    (hit,) = response.json()["results"]
    assert hit["url"].startswith(f"/repos/{repository.pk}/-/blob/")
