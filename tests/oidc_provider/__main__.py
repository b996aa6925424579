"""``python -m tests.oidc_provider serve|groups ...`` (environment: ``OIDC_PROVIDER_*``).

- ``serve PORT REDIRECT_URI``: create the database, the client ``reposearch`` (secret
  ``OIDC_PROVIDER_CLIENT_SECRET``) and serve on 127.0.0.1:PORT until stopped;
- ``user NAME PASSWORD [GROUP ...]``: create or update a user with exactly these groups.
"""

from __future__ import annotations

import os
import sys

CLIENT_ID = "reposearch"


def _setup() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()


def _migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _register_client(redirect_uri: str) -> None:
    from oauth2_provider.models import Application

    Application.objects.update_or_create(
        client_id=CLIENT_ID,
        defaults={
            "name": "reposearch",
            "client_secret": os.environ["OIDC_PROVIDER_CLIENT_SECRET"],
            "client_type": Application.CLIENT_CONFIDENTIAL,
            "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
            "redirect_uris": redirect_uri,
            "algorithm": Application.RS256_ALGORITHM,
            "skip_authorization": False,  # the consent page is part of the flow under test
        },
    )


def _set_user(name: str, password: str, groups: list[str]) -> None:
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username=name, defaults={"email": f"{name}@idp.test"})
    user.set_password(password)
    user.save()
    user.groups.set([Group.objects.get_or_create(name=group)[0] for group in groups])


def _serve(port: int) -> None:
    from django.core.servers.basehttp import WSGIServer, run
    from django.core.wsgi import get_wsgi_application

    run("127.0.0.1", port, get_wsgi_application(), threading=True, server_cls=WSGIServer)


def main(argv: list[str]) -> int:
    _setup()
    command, *args = argv
    if command == "serve":
        _migrate()
        _register_client(args[1])
        print("ready", flush=True)
        _serve(int(args[0]))
    elif command == "user":
        _set_user(args[0], args[1], args[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
