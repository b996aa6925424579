"""Production settings: refuse to start with development secrets or DEBUG on."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import DEBUG, SECRET_KEY, env
from .env import ConfigError

if DEBUG:
    raise ConfigError("DEBUG is on: production settings refuse to start with DEBUG=1")
if SECRET_KEY.startswith("dev-only") or len(SECRET_KEY) < 32:
    raise ConfigError("SECRET_KEY is missing or too short: set a random value of 32+ characters")
if env.raw("ALLOWED_HOSTS") is None:
    raise ConfigError("ALLOWED_HOSTS is not set: list the host names this server answers to")

SESSION_COOKIE_SECURE = env.flag("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env.flag("SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# The session cookie is out of scripts' reach, and neither cookie rides on other sites' POSTs.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Strict-Transport-Security once the site is only ever served over https (0: not sent).
SECURE_HSTS_SECONDS = env.non_negative_int("SECURE_HSTS_SECONDS", 0)
