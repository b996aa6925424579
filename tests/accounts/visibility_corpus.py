"""Two indexed repositories for the visibility tests: ``acme/shop`` (every account may see it)
and ``acme/vault`` (restricted to the group ``team-a``), whose code alone holds ``SECRET``.

Both have a real bare clone (file views, ``get_file``) and vectors of the local model. The shop
calls ``zanzibar_quokka_token`` -- defined only in the vault -- so every kind of search has a
visible match beside the restricted ones and totals can be compared.

``leaks(obj, vault)`` lists what of the vault shows in anything JSON-like: its secret, id,
name or URL.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group

from accounts.visibility import Viewer, viewer_for
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.accounts_support import make_account
from tests.factories import Piece, SourceDoc, indexed_repository

SECRET = "ZQ_SECRET_7731"
GROUP = "team-a"

VAULT_FILES = [
    SourceDoc(
        "src/vault.py",
        [
            Piece(
                "def zanzibar_quokka_token(settings):\n"
                '    """Read the vault token for the connection pool."""\n'
                f'    return settings["{SECRET}"]',
                "zanzibar_quokka_token",
            ),
            Piece(
                "def open_vault(settings):\n"
                "    token = zanzibar_quokka_token(settings)\n"
                "    return connect_vault(token)",
                "open_vault",
                calls=["zanzibar_quokka_token", "connect_vault"],
            ),
            Piece(
                f'def connect_vault(token):\n    return ("vault", token, "{SECRET}")',
                "connect_vault",
            ),
        ],
        gap=1,
    ),
    SourceDoc(
        "src/Vault.hs",
        [Piece(f'module Vault where\nzanzibarQuokka = "{SECRET}"', "Vault", kind="module")],
        language="haskell",
    ),
]
SHOP_FILES = [
    SourceDoc(
        "src/pool.py",
        [
            Piece(
                "def configure_pool(settings):\n"
                '    """Configure the connection pool with the vault token."""\n'
                "    token = zanzibar_quokka_token(settings)\n"
                "    return make_pool(token)",
                "configure_pool",
                calls=["zanzibar_quokka_token", "make_pool"],
            ),
            Piece("def make_pool(token):\n    return [token]", "make_pool"),
        ],
        gap=1,
    ),
]


@dataclass
class Corpus:
    shop: Repository
    vault: Repository
    member: Any  # a read account in team-a
    outsider: Any  # a read account in no group
    writer: Any  # a write account in no group (for the write endpoints' 404s)

    @property
    def as_member(self) -> Viewer:
        return viewer_for(self.member)

    @property
    def as_outsider(self) -> Viewer:
        return viewer_for(self.outsider)


def build_corpus() -> Corpus:
    shop = indexed_repository(
        "acme/shop", SHOP_FILES, url="https://example.com/acme/shop.git", clone=True, embed=True
    )
    vault = indexed_repository(
        "acme/vault", VAULT_FILES, url="https://example.com/acme/vault.git", clone=True, embed=True
    )
    member = make_account("read", groups=[GROUP])
    vault.visible_to_groups.set([Group.objects.get(name=GROUP)])
    return Corpus(shop, vault, member, make_account("read"), make_account("write"))


@pytest.fixture
def corpus(db: Any, settings: Any, tmp_path: Any) -> Iterator[Corpus]:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    built = build_corpus()
    yield built
    for repository in (built.shop, built.vault):
        shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def leaks(obj: Any, vault: Repository) -> list[str]:
    """What of ``vault`` appears in ``obj`` (serialised as JSON, or taken as text)."""
    text = obj if isinstance(obj, str) else json.dumps(obj, default=str)
    marks = [SECRET, str(vault.pk), vault.name, vault.url, "zanzibarQuokka", "open_vault"]
    return [mark for mark in marks if mark in text]
