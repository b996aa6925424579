"""Sign-in from the team's identity provider: a trusted reverse-proxy header and OpenID Connect.

``proxies`` decides which peers are trusted reverse proxies, ``remote_user`` signs in the user a
trusted proxy names in a header, ``oidc`` signs in through an OpenID Connect provider, and
``groups`` turns the provider's group names into Django groups (the role groups included), the
same way for both. Set-up: docs/operators/tls-and-sign-in.md.
"""
