"""ASGI entry point."""

from __future__ import annotations

from django.core.asgi import get_asgi_application

from reposearch.startup import load_settings_or_exit

load_settings_or_exit()
application = get_asgi_application()
