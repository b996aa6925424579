"""The OpenAPI document generates without a warning: each choice set has one name a client
generator can use (it had ``StatusD2dEnum`` for the stages' status, and the symbol tiers twice)."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command


def test_the_schema_generates_without_warnings_and_names_each_enum_once(tmp_path: Path) -> None:
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))
    text = out.read_text()
    assert "StageStatusEnum:" in text and "SymbolMatchEnum:" in text
    assert "D2dEnum" not in text and "\n    MatchEnum:" not in text
