"""Settings of the test identity provider; everything specific comes from ``OIDC_PROVIDER_*``."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(os.environ["OIDC_PROVIDER_DATA_DIR"])
ISSUER = os.environ["OIDC_PROVIDER_ISSUER"]  # http://127.0.0.1:<port>/o

DEBUG = False
SECRET_KEY = "test-identity-provider-" + "x" * 32
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.oidc_provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "idp.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
# Browsers keep cookies per host, not per port: names of its own so that the provider's session
# and reposearch's (both on 127.0.0.1) do not overwrite each other.
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": ISSUER,
    "OIDC_RSA_PRIVATE_KEY": (DATA_DIR / "signing-key.pem").read_text(),
    "PKCE_REQUIRED": True,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name and user name",
        "email": "Your e-mail address",
        "groups": "Your groups",
    },
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.claims.ClaimsValidator",
}
LOGGING = {"version": 1, "disable_existing_loggers": False}
