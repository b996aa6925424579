"""Start-up guard shared by manage.py, WSGI/ASGI and Celery: a bad setting is one line, not a trace."""

from __future__ import annotations

import importlib
import os
import sys

DEFAULT_SETTINGS = "reposearch.settings.base"
# Whether the caller chose a settings module; ``load_settings_or_exit`` fills in the default.
GIVEN_SETTINGS_MODULE = os.environ.get("DJANGO_SETTINGS_MODULE")


def load_settings_or_exit() -> None:
    """Import the settings module now so a ``ConfigError`` ends the process with one clear line."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", DEFAULT_SETTINGS)
    from reposearch.settings.env import ConfigError

    try:
        importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ConfigError as error:
        sys.stderr.write(f"reposearch: configuration error: {error}\n")
        raise SystemExit(2) from None
