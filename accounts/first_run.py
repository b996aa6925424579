"""The first start on an empty database: an administrator and where to find its secrets.

``ensure_initial_admin(data_dir)`` creates ``admin`` with a random password and an admin-scoped
API token when no account exists yet, and writes them to ``<data_dir>/initial-admin.txt``
(mode 0600, ``username: admin`` / ``password: ...`` / ``token: ...``). Once any account exists
it does nothing, so later starts leave the file and the accounts alone.

``people_lines`` is what the first start (``manage.py initial_admin``, ``make up``) tells an
operator about giving colleagues accounts, roles and visibility groups: the People page and the
``manage.py`` commands, so nobody has to invent a group name.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from reposearch.data_folder import private_folder

FILE_NAME = "initial-admin.txt"
USERNAME = "admin"


PEOPLE_PATH = "/people/"


def people_lines(manage: str = "manage.py", base_url: str = "") -> list[str]:
    """How to add people and give roles, naming the page and the commands; ``manage`` is how
    to run ``manage.py`` here, ``base_url`` the site's address (without the trailing slash)."""
    return [
        f"people and roles: {base_url}{PEOPLE_PATH} (administrators), or {manage} users"
        " | role grant USER write|admin | role revoke USER | visibility_group add GROUP USER"
        " | createtoken USER NAME | revoketoken USER TOKEN",
        f"more accounts: {base_url}/admin/auth/user/add/ (a reader until given a role),"
        " or manage.py createsuperuser run as above (an administrator)",
    ]


def initial_admin_path(data_dir: Path) -> Path:
    return Path(data_dir) / FILE_NAME


def ensure_initial_admin(data_dir: Path) -> Path | None:
    """Create the first administrator if there is no account; the file written, else ``None``."""
    # Imported here: ``initial_admin_path`` is used before Django's apps are loaded.
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from accounts.audit import record
    from accounts.tokens import create_token

    users = get_user_model().objects
    with transaction.atomic():
        if users.exists():
            return None
        password = secrets.token_urlsafe(18)
        admin = users.create_superuser(USERNAME, email="", password=password)
        made = create_token(admin, "initial admin token", "admin")
        path = initial_admin_path(data_dir)
        private_folder(path.parent)
        text = f"username: {USERNAME}\npassword: {password}\ntoken: {made.secret}\n"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
        os.chmod(path, 0o600)  # also when the file existed with wider permissions
    record("account.initial_admin", target=USERNAME, details={"file": str(path)})
    return path
