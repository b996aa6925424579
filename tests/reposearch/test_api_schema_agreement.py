"""The API and its schema agree on what input is valid (issue 33 item 8), where they did not:
blank text the API refuses was valid in the schema (``{"url": ""}``, ``{"name": "   "}``),
NUL characters the API refuses anywhere were valid, a number was taken for a token's name,
``?all=null`` was read as false, and ``before=0`` of the audit log was valid in the schema.

Each is checked both ways: what the schema says (with the regex dialect of the schema
validator schemathesis uses) and what the API answers. Then schemathesis' own acceptance checks
(schema-valid input accepted, schema-violating input refused) run on the token and audit
operations, which now pass them.
"""

from __future__ import annotations

from typing import Any

import hypothesis
import jsonschema_rs
import pytest
import schemathesis
from schemathesis import checks

from tests.accounts_support import bearer, make_account, token_client, token_for
from tests.reposearch.test_api_schemathesis import CHECKS, SETTINGS, _generated_schema

pytestmark = pytest.mark.django_db

BLANKS = ["", "   ", "\t\n", "\x1c", "\u3000"]


def schema_document() -> dict[str, Any]:
    return _generated_schema()


def valid(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    return bool(jsonschema_rs.validator_for({**schema, "components": document["components"]}).is_valid(value))  # fmt: skip


@pytest.mark.parametrize(
    ("component", "field"),
    [
        ("TokenCreate", "name"),
        ("RepositoryCreate", "url"),
        ("ConfigUpdate", "chat_model"),
        ("SearchRequest", "cursor"),
        ("LocalizeRequest", "branch"),
        # free text kept as typed, refused when only spaces
        ("SearchRequest", "query"),
        ("AskRequest", "question"),
        ("LocalizeRequest", "issue"),
    ],
)
def test_blank_text_the_api_refuses_is_invalid_in_the_schema(component: str, field: str) -> None:
    document = schema_document()
    schema = document["components"]["schemas"][component]["properties"][field]
    for blank in BLANKS:
        assert not valid(document, schema, blank), (component, field, blank)
    assert not valid(document, schema, "a\x00b")
    assert valid(document, schema, " some text ")


def test_a_token_name_must_be_text_that_is_not_blank() -> None:
    client = token_client("read")
    for name in ["", "   ", 0, "a\x00b"]:
        response = client.post("/api/tokens", {"name": name, "scope": "read"}, format="json")
        assert response.status_code == 400, (name, response.content)
        assert response.json()["error"]["details"]["fields"]["name"]
    assert (
        client.post("/api/tokens", {"name": " ci ", "scope": "read"}, format="json").status_code
        == 201
    )


def test_all_tokens_takes_a_boolean_and_nothing_else() -> None:
    admin = token_client("admin")
    token_for(make_account("read"), name="someone else's")
    for value in ["null", "maybe", ""]:
        response = admin.get("/api/tokens", {"all": value})
        assert response.status_code == 400, value
        assert response.json()["error"]["details"]["fields"] == {"all": "not a boolean"}
    assert admin.get("/api/tokens?all=true&all=false").status_code == 400
    everyone = admin.get("/api/tokens", {"all": "true"}).json()["results"]
    own = admin.get("/api/tokens", {"all": "false"}).json()["results"]
    assert "someone else's" in [t["name"] for t in everyone]
    assert "someone else's" not in [t["name"] for t in own]


def test_the_audit_logs_page_parameters_say_what_the_api_accepts() -> None:
    document = schema_document()
    parameters = {
        p["name"]: p["schema"] for p in document["paths"]["/api/audit"]["get"]["parameters"]
    }
    assert parameters["before"]["minimum"] == 1 and parameters["limit"]["minimum"] == 1
    assert parameters["actor"]["pattern"] == "^[^\\x00]*$"
    admin = token_client("admin")
    assert admin.get("/api/audit", {"before": "0"}).status_code == 400
    assert admin.get("/api/audit", {"limit": "0"}).status_code == 400
    assert admin.get("/api/audit", {"before": "1", "limit": "1"}).status_code == 200


acceptance = schemathesis.openapi.from_dict(_generated_schema())


@acceptance.include(path_regex="^/api/(tokens|audit)$").parametrize()
@hypothesis.settings(SETTINGS, max_examples=30)
@pytest.mark.django_db(transaction=True)
def test_schema_valid_token_and_audit_requests_are_accepted_and_others_refused(  # type: ignore[no-untyped-def]
    case, live_server
) -> None:
    headers = bearer(token_for(make_account("admin")))
    acceptance_checks = [*CHECKS, checks.positive_data_acceptance, checks.negative_data_rejection]
    case.call_and_validate(base_url=live_server.url, checks=acceptance_checks, headers=headers)
