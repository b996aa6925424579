"""A real OpenID Connect provider for the sign-in tests: django-oauth-toolkit in its own process.

Its own tiny Django project (``settings``, ``urls``), its own SQLite database in a temporary
directory (this is the identity provider's data, not reposearch's) and its own RSA signing key.
``python -m tests.oidc_provider`` serves it and changes its users' groups; ``process`` starts it
from the tests.
"""
