"""File pages browse like a code host's: a file-tree sidebar, the directory's README, a file's
history and blame at a commit, all from the clone, with permalinks; hidden repositories stay
404s exactly like missing ones."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from frontend import browse_views, history_views
from indexing.clone_paths import repository_dir
from indexing.git.history import blame_file, file_history
from indexing.models import Repository
from tests.accounts_support import make_account, session_client
from tests.frontend.signed_in import ui_client
from tests.indexing.git_history_support import PATH, build_source, clone, git, git_blame, git_log
from tests.indexing.real_run import fetch_and_index

pytestmark = pytest.mark.django_db

README = """# Demo project

Some *emphasis*, **strong** and `code`; a [guide](docs/guide.md), an
[outside link](https://example.com/x) and a [bad one](javascript:alert(1)).

<script>alert("raw html")</script>

- one
- two

```
<b>not bold</b>
```
"""


@pytest.fixture
def source(tmp_path: Path) -> Path:
    source = build_source(tmp_path)
    (source / "README.md").write_text(README)
    (source / "docs").mkdir()
    (source / "docs" / "guide.md").write_text("# Guide\n")
    for n in range(130):
        (source / "src" / "app" / f"mod_{n:03}.py").write_text(f"N = {n}\n")
    git(source, "add", "-A", when=1_800_000_000)
    git(source, "commit", "-q", "-m", "Docs and modules", when=1_800_000_000)
    return source


@pytest.fixture
def demo(settings: Any, tmp_path: Path, source: Path) -> Iterator[Repository]:
    """acme/demo fetched and indexed by the real pipeline (a shallow clone, as always)."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    repository = fetch_and_index(source).repository
    repository.refresh_from_db()
    assert repository.last_indexed_commit
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def _full_clone(repository: Repository, source: Path) -> Path:
    """The repository's clone replaced by a full one of the same branch (same commit)."""
    directory = repository_dir(repository.pk)
    shutil.rmtree(directory)
    assert clone(source, directory, depth=None) == repository.last_indexed_commit
    return directory


def _get(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def test_the_history_page_lists_git_logs_commits_with_permalinks(
    demo: Repository, source: Path
) -> None:
    client = ui_client("read")
    commit = demo.last_indexed_commit
    directory = _full_clone(demo, source)
    expected = git_log(directory, commit)
    html = _get(client, f"/repos/acme/demo/-/commits/HEAD/{PATH}")
    listed = html.split('class="history-list"', 1)[1].split("</ol>", 1)[0]
    shown = re.findall(r'href="/repos/acme/demo/-/blob/([0-9a-f]{40})/' + PATH + '"', listed)
    assert shown == expected
    assert "Add core" in html and "Ada Lovelace" in html
    assert f'href="/repos/acme/demo/-/blame/{expected[1]}/{PATH}"' in html
    assert "data-shallow-end" not in html and "data-history-bound" not in html
    # The file page links to both, at its commit.
    html = _get(client, f"/repos/acme/demo/-/blob/{commit}/{PATH}")
    assert f'href="/repos/acme/demo/-/commits/{commit}/{PATH}"' in html
    assert f'href="/repos/acme/demo/-/blame/{commit}/{PATH}"' in html


def test_history_on_the_shallow_clone_says_where_it_ends(demo: Repository) -> None:
    commit = demo.last_indexed_commit
    html = _get(ui_client("read"), f"/repos/acme/demo/-/commits/{commit}/{PATH}")
    assert git_log(repository_dir(demo.pk), commit) == [commit]
    assert html.count('class="history-commit"') == 1
    assert "data-shallow-end" in html and "shallow clone" in html
    # On a known code host, the notice links to the whole history there.
    Repository.objects.filter(pk=demo.pk).update(url="https://github.com/acme/demo.git")
    html = _get(ui_client("read"), f"/repos/acme/demo/-/commits/{commit}/{PATH}")
    assert f'href="https://github.com/acme/demo/commits/{commit}/{PATH}"' in html
    html = _get(ui_client("read"), f"/repos/acme/demo/-/blame/{commit}/{PATH}")
    assert "data-shallow-end" in html
    assert f'href="https://github.com/acme/demo/commits/{commit}/{PATH}"' in html


def test_with_a_history_depth_the_pipelines_own_clone_has_git_logs_history(
    settings: Any, tmp_path: Path, source: Path
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    settings.REPO_SEARCH_HISTORY_DEPTH = 0  # the whole history
    repository = fetch_and_index(source).repository
    repository.refresh_from_db()
    commit = repository.last_indexed_commit
    expected = git_log(source / ".git", commit)
    assert len(expected) > 1
    html = _get(ui_client("read"), f"/repos/acme/demo/-/commits/{commit}/{PATH}")
    listed = html.split('class="history-list"', 1)[1].split("</ol>", 1)[0]
    shown = re.findall(r'href="/repos/acme/demo/-/blob/([0-9a-f]{40})/' + PATH + '"', listed)
    assert shown == expected
    assert "data-shallow-end" not in html


def test_history_past_its_bound_says_so(
    demo: Repository, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _full_clone(demo, source)
    monkeypatch.setattr(history_views, "HISTORY_MAX_COMMITS", 2)
    monkeypatch.setattr(history_views, "file_history", partial(file_history, max_commits=2))
    html = _get(ui_client("read"), f"/repos/acme/demo/-/commits/HEAD/{PATH}")
    assert html.count('class="history-commit"') == 2
    assert "data-history-bound" in html and "Showing the last 2 commits" in html
    assert "older ones are not listed" in html


def test_the_blame_page_gives_each_line_git_blames_commit(demo: Repository, source: Path) -> None:
    commit = demo.last_indexed_commit
    directory = _full_clone(demo, source)
    expected = git_blame(directory, commit)
    html = _get(ui_client("read"), f"/repos/acme/demo/-/blame/{commit}/{PATH}")
    rows = re.findall(r'<tr id="L(\d+)" class="([^"]*)">(.*?)</tr>', html, re.S)
    assert len(rows) == len(expected)
    owner = ""
    for (number, css, cells), sha in zip(rows, expected, strict=True):
        link = re.search(r'href="/repos/acme/demo/-/blob/([0-9a-f]{40})/' + PATH + '"', cells)
        if "blame-first" in css:
            assert link is not None, number
            owner = link.group(1)
        assert owner == sha, number
    assert "changed in step 0" in re.sub(r"<[^>]+>", "", html) and "data-blame-bound" not in html


def test_blame_of_a_file_too_large_says_so(
    demo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_views, "blame_file", partial(blame_file, max_bytes=10))
    html = _get(ui_client("read"), f"/repos/acme/demo/-/blame/HEAD/{PATH}")
    assert "data-blame-bound" in html and "too large to blame" in html


def test_the_file_page_has_a_bounded_tree_sidebar_at_its_commit(demo: Repository) -> None:
    commit = demo.last_indexed_commit
    html = _get(ui_client("read"), f"/repos/acme/demo/-/blob/HEAD/{PATH}")
    sidebar = html.split("data-file-tree", 1)[1].split("</nav>", 1)[0]
    base = "/repos/acme/demo/-/"
    # The root's entries, src and src/app expanded, README a permalink at the commit.
    assert f'href="{base}tree/{commit}/src"' in sidebar
    assert f'href="{base}blob/{commit}/README.md"' in sidebar
    assert f'href="{base}tree/{commit}/docs"' in sidebar
    assert f'href="{base}tree/{commit}/src/app"' in sidebar
    assert 'aria-current="page">core.py<' in sidebar
    # src/app holds 131 files: the first 100 are listed (core.py always), then "N more".
    assert f'href="{base}blob/{commit}/src/app/mod_000.py"' in sidebar
    assert f"{base}blob/{commit}/src/app/mod_129.py" not in sidebar
    assert re.search(rf'href="{base}tree/{commit}/src/app">\d+ more', sidebar)
    assert "31 more" in sidebar


def test_the_tree_page_renders_its_readme_safely(
    demo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = demo.last_indexed_commit
    html = _get(ui_client("read"), "/repos/acme/demo/-/tree/HEAD")
    readme = html.split("data-readme", 1)[1].split("</section>", 1)[0]
    assert "<h2>Demo project</h2>" in readme
    assert "<em>emphasis</em>" in readme and "<strong>strong</strong>" in readme
    assert "<code>code</code>" in readme and "<li>one</li>" in readme
    assert f'href="/repos/acme/demo/-/blob/{commit}/docs/guide.md"' in readme
    assert 'href="https://example.com/x"' in readme
    assert "javascript:" not in readme.replace("javascript:alert(1)", "")  # shown as text only
    assert 'href="javascript' not in readme
    assert "<script>" not in readme and "&lt;script&gt;" in readme
    assert "<b>" not in readme and "&lt;b&gt;not bold&lt;/b&gt;" in readme
    monkeypatch.setattr(browse_views, "MAX_README_BYTES", 10)
    readme = _get(ui_client("read"), "/repos/acme/demo/-/tree/HEAD").split("data-readme", 1)[1]
    assert "too large to show here" in readme and "Demo project" not in readme
    assert f'href="/repos/acme/demo/-/commits/{commit}/src"' in _get(
        ui_client("read"), "/repos/acme/demo/-/tree/HEAD/src"
    )


def test_hidden_repositories_answer_404_like_missing_ones(demo: Repository) -> None:
    member = make_account("read", groups=["team-h"])
    demo.visible_to_groups.set([Group.objects.get(name="team-h")])
    outsider = session_client("read")
    for url in (
        f"/repos/acme/demo/-/commits/HEAD/{PATH}",
        f"/repos/acme/demo/-/blame/HEAD/{PATH}",
        f"/repos/{demo.pk}/-/commits/HEAD/src",
    ):
        hidden = outsider.get(url)
        missing = outsider.get(
            url.replace("acme/demo", "acme/none").replace(str(demo.pk), "acme/none")
        )
        assert hidden.status_code == missing.status_code == 404, url
        assert b"acme/demo" not in hidden.content, hidden.content.decode()[-1500:]
        assert b"Ada Lovelace" not in hidden.content and b"core.py" not in hidden.content
        assert session_client(user=member).get(url).status_code == 200, url
    for url in (
        "/repos/acme/demo/-/commits/HEAD/nowhere.py",
        "/repos/acme/demo/-/blame/HEAD/nowhere.py",
    ):
        assert session_client(user=member).get(url).status_code == 404, url
    response = session_client(user=member).get("/repos/acme/demo/-/blame/HEAD/src")
    assert response["Location"].startswith("/repos/acme/demo/-/commits/")


@pytest.mark.parametrize(
    ("url", "status"),
    [
        (f"/repos/acme/demo/-/commits/HEAD/src/../{PATH}", 400),
        ("/repos/acme/demo/-/blame/HEAD/src//app/core.py", 400),
        (f"/repos/acme/demo/-/blame/0123456789abcdef0123456789abcdef01234567/{PATH}", 404),
        (f"/repos/acme/demo/-/commits/not-a-commit/{PATH}", 404),
        ("/repos/acme/demo/-/blame/HEAD/src/app/nothing.py", 404),
    ],
)
def test_bad_history_and_blame_addresses_are_clear_pages(
    demo: Repository, url: str, status: int
) -> None:
    response = ui_client("read").get(url)
    assert response.status_code == status, url
    assert b"<h1" in response.content
