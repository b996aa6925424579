"""What docker compose gives a service's containers: a ``.env`` file read as compose reads it and
``${VARIABLE}`` interpolation with its defaults and errors (``tests.image_assembly`` and the
compose tests use them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_VARIABLE = re.compile(
    r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)


def read_dotenv(text: str) -> dict[str, str]:
    """A compose ``.env`` file: NAME=value lines (quotes around a value removed)."""
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}``, ``${NAME:?error}`` and ``$$``."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        operator, argument = match.group(2), match.group(3) or ""
        value = variables.get(name)
        unset = value is None or (value == "" and operator is not None and operator.startswith(":"))
        if operator and operator.endswith("-") and unset:
            return argument
        if operator and operator.endswith("?") and unset:
            raise ValueError(f"compose refuses to start: {argument}")
        return value or ""

    return _VARIABLE.sub(replace, text)


def compose_service_environment(
    compose: Mapping[str, Any], service: str, dotenv: Mapping[str, str]
) -> dict[str, str]:
    """What compose gives a service's container: its ``env_file`` (.env), then its
    ``environment`` interpolated with the .env's values."""
    definition = compose["services"][service]
    env: dict[str, str] = {}
    if definition.get("env_file"):
        env.update(dotenv)
    for name, value in (definition.get("environment") or {}).items():
        env[name] = interpolate(str(value), dotenv)
    return env
