"""The error shape in the OpenAPI schema, and the errors every operation can give.

Views declare their own refusals with ``error_responses(404, 409, ...)``; the postprocessing
hook ``declare_common_errors`` marks request bodies closed (unknown fields are a 400) and adds
what ``reposearch.request_guards`` answers for any route
(400 for a NUL in a query parameter or too-deep JSON, 411 for a chunked body, 413 for a body
over the limit) and the
404 of an unknown id in the path, so the schema lists every status the API gives.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

ERROR_REF = {"$ref": "#/components/schemas/Error"}

DESCRIPTIONS = {
    400: "Invalid input: the message says what and where (`error.details.fields` per field;"
    " `unknown_parameter` for a query parameter the operation does not list).",
    401: "Not authenticated: no, a malformed, an expired or a revoked API token (send "
    "`Authorization: Bearer <token>`), or a webhook whose signature does not match.",
    403: "Signed in, but the account's role (or the token's scope) does not allow this.",
    404: "Not found: an unknown id in the path or in the body.",
    409: "Conflict with the current state (e.g. a duplicate, or a limit reached).",
    411: "A chunked body without Content-Length (it would not be read).",
    413: "The body or a text field is over its limit.",
    502: "The chat model answered with something unusable.",
    429: "Over the account's request budget, or (a search) as many costly searches of the"
    " account running as it may run at once; `Retry-After` says when to try again.",
    503: "A dependency is unavailable right now; worth retrying.",
}


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, for programs: invalid, not_found, duplicate…")
    message = serializers.CharField(help_text="One sentence for people.")
    details = serializers.DictField(help_text="Ids, limits or per-field errors.")


class ErrorSerializer(serializers.Serializer):
    """``{"error": {"code", "message", "details"}}``: every 4xx/5xx answer of the API."""

    error = ErrorDetailSerializer()


# ECMA-262 (the schema's regex dialect), Python's ``re`` and Rust's ``regex`` alike read these.
NUL_FREE = r"^[^\x00]*$"
# What Python's str.strip() removes (so DRF's trim_whitespace): ECMA's \s is not the same set.
SPACES = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NON_BLANK_TEXT = rf"^[^\x00]*[^\x00{SPACES}][^\x00]*$"


class NonBlankText(OpenApiSerializerFieldExtension):
    """A text field of a request that refuses blank text (DRF's ``CharField`` default: ``""``, and
    with ``trim_whitespace`` only spaces, are "This field may not be blank") says so in the
    schema: ``minLength: 1`` and a non-space character; and no text may hold a NUL (DRF refuses
    it). Without it the schema called ``{"url": ""}`` valid and the API answered 400."""

    target_class = "rest_framework.fields.CharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        field = self.target
        schema = auto_schema._map_serializer_field(field, direction, bypass_extensions=True)
        if direction != "request" or schema.get("type") != "string" or "pattern" in schema:
            return schema
        if not field.allow_blank:
            schema.setdefault("minLength", 1)
        # DRF refuses NUL in any text; a blank-refusing trimmed field wants a non-space too.
        refuses_blank = field.trim_whitespace or getattr(field, "refuses_blank_text", False)
        schema["pattern"] = NON_BLANK_TEXT if refuses_blank and not field.allow_blank else NUL_FREE
        return schema


def error_responses(*statuses: int, **descriptions: str) -> dict[int, OpenApiResponse]:
    """``{status: OpenApiResponse(Error)}`` for ``extend_schema(responses=...)``.

    A description for status ``n`` may be given as ``s<n>="..."``.
    """
    return {
        status: OpenApiResponse(
            ErrorSerializer, description=descriptions.get(f"s{status}", DESCRIPTIONS[status])
        )
        for status in statuses
    }


def _error_response(status: int) -> dict[str, Any]:
    return {
        "description": DESCRIPTIONS[status],
        "content": {"application/json": {"schema": ERROR_REF}},
    }


def _request_components(result: dict[str, Any]) -> set[str]:
    names = set()
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            for media in content.values():
                ref = media.get("schema", {}).get("$ref", "")
                if ref.startswith("#/components/schemas/"):
                    names.add(ref.rsplit("/", 1)[1])
    return names


def declare_common_errors(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the errors any /api/ operation can give."""
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/") or path in ("/api/schema", "/api/health"):
            continue
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            wanted = [400, 503]  # 503: the database is unavailable (reposearch/api_errors.py)
            if not path.startswith("/api/hooks/"):  # accounts: who may call it, and how often
                wanted += [401, 403, 429]
            if method in ("post", "put", "patch", "delete"):
                wanted += [411, 413]
            if "{" in path:
                wanted.append(404)
            for status in wanted:
                responses.setdefault(str(status), _error_response(status))
            # reposearch.request_guards answers 400 to a NUL in any query parameter.
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "query" and schema.get("type") == "string":
                    schema.setdefault("pattern", NUL_FREE)
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    # Request bodies refuse fields they do not declare (StrictSerializer, the config's own).
    for name in _request_components(result):
        schemas.get(name, {}).setdefault("additionalProperties", False)
    if "Error" not in schemas:
        schemas["Error"] = {
            "type": "object",
            "properties": {
                "error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "details": {"type": "object", "additionalProperties": {}},
                    },
                    "required": ["code", "message", "details"],
                }
            },
            "required": ["error"],
        }
    return result
