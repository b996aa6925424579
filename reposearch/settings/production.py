"""Production settings: refuse to start with development or placeholder secrets, or DEBUG on.

Cookies are ``Secure`` (sent over https only) unless ``REPO_SEARCH_PLAIN_HTTP=1`` says the site
is tried over plain http (a LAN trial before the TLS proxy): browsers refuse to keep a ``Secure``
cookie from an http page, so signing in over http fails without it. ``check --deploy`` then
reports the cookies as not secure (Django's security.W012 and W016).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .base import *  # noqa: F403
from .base import DATABASE_URL, DEBUG, REDIS_URL, SECRET_KEY, env
from .env import DEVELOPMENT_SECRET_KEY, ConfigError

# .env.example's placeholders start with this; a copied file must not run with them.
PLACEHOLDER_PREFIX = "change-me"
GENERATE_SECRET_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"  # noqa: S105 - a command, not a key
# Letters and digits only: the passwords go into URLs and Redis's configuration file.
GENERATE_PASSWORD = "python -c 'import secrets; print(secrets.token_hex(24))'"  # noqa: S105 - a command

if DEBUG:
    raise ConfigError("DEBUG is on: production settings refuse to start with DEBUG=1")
if SECRET_KEY.lower().startswith(PLACEHOLDER_PREFIX):
    raise ConfigError(
        "SECRET_KEY is the placeholder of .env.example, which anyone can read: set a random"
        f" value, e.g. the output of {GENERATE_SECRET_KEY}"
    )
if SECRET_KEY == DEVELOPMENT_SECRET_KEY or len(SECRET_KEY) < 32:
    raise ConfigError(
        "SECRET_KEY is missing or too short: set a random value of 32+ characters, e.g. the"
        f" output of {GENERATE_SECRET_KEY}"
    )
_PASSWORDS = (
    ("DATABASE_URL", DATABASE_URL, "POSTGRES_PASSWORD"),
    ("REDIS_URL", REDIS_URL, "REDIS_PASSWORD"),
)
for _name, _url, _compose_name in _PASSWORDS:
    _password = urlsplit(_url).password or ""
    if _password.lower().startswith(PLACEHOLDER_PREFIX):
        raise ConfigError(
            f"the password in {_name} ({_compose_name} in docker compose's .env) is the"
            f" placeholder of .env.example: set a random one, e.g. the output of {GENERATE_PASSWORD}"
            + (
                " (a database made with the placeholder keeps it until changed: docker compose"
                " exec db psql -U reposearch -c '\\password reposearch')"
                if _compose_name == "POSTGRES_PASSWORD"
                else ""
            )
        )
if env.raw("ALLOWED_HOSTS") is None:
    raise ConfigError("ALLOWED_HOSTS is not set: list the host names this server answers to")

# Plain http on purpose (REPO_SEARCH_PLAIN_HTTP=1; SECURE_COOKIES=0 is its older spelling).
REPO_SEARCH_PLAIN_HTTP = env.flag("REPO_SEARCH_PLAIN_HTTP", not env.flag("SECURE_COOKIES", True))
SESSION_COOKIE_SECURE = not REPO_SEARCH_PLAIN_HTTP
CSRF_COOKIE_SECURE = not REPO_SEARCH_PLAIN_HTTP
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
