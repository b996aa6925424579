"""Start-up guard shared by manage.py, WSGI/ASGI and Celery: a bad setting is one line, not a trace,
and a data directory other users could read is made private (``reposearch.data_folder``)."""

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
        module = importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ConfigError as error:
        sys.stderr.write(f"reposearch: configuration error: {error}\n")
        raise SystemExit(2) from None
    data = getattr(module, "REPO_SEARCH_DATA_DIR", None)
    if data is not None:  # a data directory made before it had to be private is tightened
        from reposearch.data_folder import make_private

        for folder in make_private(data, create=False):
            sys.stderr.write(f"reposearch: {folder} was readable by others; now it is not\n")
