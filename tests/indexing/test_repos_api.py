"""The repositories API: what a client sees for good and bad requests (no worker needed)."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from indexing.models import IndexJob, Repository, RepositoryStatus
from tests.accounts_support import token_client
from tests.refusals import error_of


@pytest.fixture
def api() -> APIClient:
    return token_client()


@pytest.mark.django_db
def test_add_returns_202_with_the_repository_and_its_queued_job(api, public_dns) -> None:
    response = api.post(
        "/api/repos", {"url": "https://github.com/pallets/click.git"}, format="json"
    )
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["name"] == "pallets/click"
    assert body["status"] == RepositoryStatus.PENDING
    assert body["job"]["state"] == "queued"
    assert body["job"]["kind"] == "full"
    assert IndexJob.objects.filter(repository_id=body["id"]).count() == 1

    listed = api.get("/api/repos").json()
    assert [item["id"] for item in listed] == [body["id"]]
    detail = api.get(f"/api/repos/{body['id']}").json()
    assert detail["current_job"]["state"] == "queued"
    job = api.get(f"/api/jobs/{body['job']['id']}").json()
    assert job["repository_id"] == body["id"]


@pytest.mark.django_db
def test_the_same_url_and_branch_twice_is_409_naming_the_existing_one(api, public_dns) -> None:
    first = api.post("/api/repos", {"url": "https://example.org/team/app.git"}, format="json")
    second = api.post("/api/repos", {"url": "https://example.org/team/app.git"}, format="json")
    assert second.status_code == 409
    error = error_of(second)
    assert error["code"] == "duplicate"
    assert "team/app" in error["message"]
    assert error["details"]["repository_id"] == first.json()["id"]
    other_branch = api.post(
        "/api/repos", {"url": "https://example.org/team/app.git", "branch": "dev"}, format="json"
    )
    assert other_branch.status_code == 202


@pytest.mark.django_db
def test_the_repository_limit_is_409_with_the_limit(api, public_dns, settings) -> None:
    settings.REPO_SEARCH_MAX_REPOS = 2
    for name in ("a", "b"):
        assert (
            api.post(
                "/api/repos", {"url": f"https://example.org/x/{name}.git"}, format="json"
            ).status_code
            == 202
        )
    response = api.post("/api/repos", {"url": "https://example.org/x/c.git"}, format="json")
    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "limit_reached"
    assert "(2;" in error["message"]
    assert Repository.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "url"),
        ({"url": ""}, "url"),
        ({"url": 42}, "url: Not a valid string"),
        ({"url": "https://example.org/a.git", "branch": ["x"]}, "branch"),
        ({"url": "ftp://example.org/a.git"}, "scheme"),
        ({"url": "not a url at all"}, ""),
        ({"url": "https://example.org/a.git", "branch": "bad..name"}, "not a valid branch name"),
        ({"url": "https://example.org/a.git", "colour": "blue"}, "unknown fields: colour"),
        ({"url": "https://nonexistent.invalid/a.git"}, "nonexistent.invalid"),
    ],
)
def test_bad_add_requests_are_400_with_a_clear_message(
    api, public_dns, settings, body, fragment
) -> None:
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = False
    response = api.post("/api/repos", body, format="json")
    assert response.status_code == 400, response.json()
    assert fragment in error_of(response)["message"]
    assert Repository.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/a.git",
        "http://0x7f.1/a.git",
        "http://2130706433/a.git",
        "http://[::1]/a.git",
        "http://[::ffff:127.0.0.1]/a.git",
        "http://10.1.2.3/a.git",
        "http://169.254.169.254/latest/meta-data",
        "file:///etc",
        "/etc",
    ],
)
def test_urls_pointing_at_this_machine_or_private_networks_are_refused(api, settings, url) -> None:
    settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS = False
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = False
    response = api.post("/api/repos", {"url": url}, format="json")
    assert response.status_code == 400, response.json()
    assert error_of(response)["code"] == "url_refused"
    assert Repository.objects.count() == 0


@pytest.mark.django_db
def test_malformed_json_is_400_not_500(api) -> None:
    response = api.generic("POST", "/api/repos", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON" in error_of(response)["message"]
    response = api.generic("POST", "/api/repos", "[1, 2]", content_type="application/json")
    assert response.status_code == 400


@pytest.mark.django_db
def test_unknown_repository_and_job_ids_are_404(api) -> None:
    for path in (f"/api/repos/{uuid.uuid4()}", "/api/repos/not-a-uuid", "/api/jobs/999999"):
        response = api.get(path)
        assert response.status_code == 404, path
        error_of(response)
    assert api.delete(f"/api/repos/{uuid.uuid4()}").status_code == 404
    assert api.post(f"/api/repos/{uuid.uuid4()}/reindex").status_code == 404


@pytest.mark.django_db
def test_a_misspelt_repository_name_is_a_404_naming_the_nearest(api) -> None:
    from tests.factories import indexed_repository

    indexed_repository("acme/shop", ["def checkout():\n    pass"])
    response = api.get("/api/repos/acme%2Fshp")
    assert response.status_code == 404
    assert error_of(response) == {
        "code": "not_found",
        "message": "no repository named 'acme/shp' — did you mean 'acme/shop'?",
        "details": {"suggestions": ["acme/shop"], "suggestion": "acme/shop"},
    }
    far = api.get("/api/repos/" + "x" * 250)  # no name that long is suggested, nor compared
    assert far.status_code == 404 and error_of(far)["details"] == {}


@pytest.mark.django_db
def test_reindex_during_a_run_is_coalesced_into_it(api, public_dns) -> None:
    created = api.post("/api/repos", {"url": "https://example.org/y/z.git"}, format="json").json()
    response = api.post(f"/api/repos/{created['id']}/reindex")
    assert response.status_code == 202
    assert response.json()["coalesced"] is True
    assert response.json()["id"] == created["job"]["id"]
    assert IndexJob.objects.filter(repository_id=created["id"]).count() == 1


@pytest.mark.django_db
def test_delete_removes_the_repository_its_rows_and_its_files(
    api, public_dns, settings, tmp_path
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    created = api.post("/api/repos", {"url": "https://example.org/d/e.git"}, format="json").json()
    checkout = tmp_path / "repos" / created["id"]
    checkout.mkdir(parents=True)
    (checkout / "HEAD").write_text("ref: refs/heads/main\n")
    response = api.delete(f"/api/repos/{created['id']}")
    assert response.status_code == 204
    assert not Repository.objects.filter(pk=created["id"]).exists()
    assert not IndexJob.objects.filter(repository_id=created["id"]).exists()
    assert not checkout.exists()


@pytest.mark.django_db
def test_a_job_of_a_deleted_repository_is_a_404_naming_the_job(
    api, public_dns, settings, tmp_path
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    created = api.post("/api/repos", {"url": "https://example.org/d/f.git"}, format="json").json()
    job_id = created["job"]["id"]
    assert api.get(f"/api/jobs/{job_id}").status_code == 200
    assert api.delete(f"/api/repos/{created['id']}").status_code == 204
    response = api.get(f"/api/jobs/{job_id}")
    assert response.status_code == 404
    assert error_of(response) == {
        "code": "not_found",
        "message": f"no job with id {job_id}; a job is deleted with its repository, so its"
        " repository may have been deleted",
        "details": {"job": job_id},
    }
