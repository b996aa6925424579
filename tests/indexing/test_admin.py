"""Operators add, re-index and delete repositories in the admin through the API's own service."""

from __future__ import annotations

from indexing.models import IndexJob, Repository


def test_adding_a_repository_queues_its_first_job(admin_client, public_dns) -> None:
    response = admin_client.post(
        "/admin/indexing/repository/add/",
        {"url": "https://example.org/team/app.git", "branch": "", "name": ""},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    repository = Repository.objects.get()
    assert repository.name == "team/app"
    assert IndexJob.objects.filter(repository=repository, state="queued").count() == 1


def test_a_refused_url_is_a_form_error_with_the_services_message(admin_client, settings) -> None:
    settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS = False
    response = admin_client.post(
        "/admin/indexing/repository/add/",
        {"url": "http://10.0.0.8/x.git", "branch": "", "name": ""},
    )
    assert response.status_code == 200
    assert "private" in response.content.decode()
    assert not Repository.objects.exists()


def test_a_duplicate_is_a_form_error(admin_client, public_dns) -> None:
    data = {"url": "https://example.org/team/app.git", "branch": "", "name": ""}
    admin_client.post("/admin/indexing/repository/add/", data)
    response = admin_client.post("/admin/indexing/repository/add/", data)
    assert response.status_code == 200
    assert "already indexed" in response.content.decode()
    assert Repository.objects.count() == 1


def test_reindex_and_delete_actions(admin_client, public_dns, settings, tmp_path) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    admin_client.post(
        "/admin/indexing/repository/add/",
        {"url": "https://example.org/team/app.git", "branch": "", "name": ""},
    )
    repository = Repository.objects.get()
    IndexJob.objects.filter(repository=repository).update(state="done")
    response = admin_client.post(
        "/admin/indexing/repository/",
        {"action": "reindex_selected", "_selected_action": [str(repository.pk)]},
    )
    assert response.status_code == 302
    assert IndexJob.objects.filter(repository=repository, state="queued").count() == 1

    (tmp_path / "repos" / str(repository.pk)).mkdir(parents=True)
    selected = {"action": "delete_selected", "_selected_action": [str(repository.pk)]}
    confirm = admin_client.post("/admin/indexing/repository/", selected)
    assert confirm.status_code == 200  # Django's confirmation page, in a few lines
    page = confirm.content.decode()
    assert "team/app" in page and "chunks and their vectors" in page
    assert Repository.objects.exists()
    response = admin_client.post("/admin/indexing/repository/", {**selected, "post": "yes"})
    assert response.status_code == 302
    assert not Repository.objects.exists()
    assert not (tmp_path / "repos" / str(repository.pk)).exists()


def test_jobs_files_and_chunks_pages_load(admin_client) -> None:
    for path in (
        "/admin/indexing/indexjob/",
        "/admin/indexing/sourcefile/",
        "/admin/indexing/chunk/",
        "/admin/indexing/repository/",
        "/admin/indexing/indexjob/?state__exact=failed",
    ):
        assert admin_client.get(path).status_code == 200, path


def test_one_delete_action(admin_client) -> None:
    Repository.objects.create(url="https://example.org/team/app.git", name="team/app")
    page = admin_client.get("/admin/indexing/repository/").content.decode()
    assert page.count('value="delete_selected"') == 1
    assert "delete_selected_repositories" not in page
    assert page.lower().count("delete selected") == 1
