"""WSGI entry point (gunicorn in production, ``make up`` locally)."""

from __future__ import annotations

from django.core.wsgi import get_wsgi_application

from reposearch.startup import load_settings_or_exit

load_settings_or_exit()
application = get_wsgi_application()
