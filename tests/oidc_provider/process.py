"""Starting the test identity provider from the tests, and changing its users."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "reposearch"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _signing_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class IdentityProvider:
    """django-oauth-toolkit serving OpenID Connect on 127.0.0.1, with a key of its own."""

    client_id = CLIENT_ID

    def __init__(self, redirect_uri: str) -> None:
        self.redirect_uri = redirect_uri
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.issuer = f"{self.url}/o"
        self.client_secret = "idp-client-secret-" + os.urandom(8).hex()
        self.data_dir = Path(tempfile.mkdtemp(prefix="reposearch-idp-"))
        (self.data_dir / "signing-key.pem").write_bytes(_signing_key())
        self.log_path = self.data_dir / "idp.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPO_SEARCH_")}
        env.pop("DATABASE_URL", None)
        env.update(
            OIDC_PROVIDER_DATA_DIR=str(self.data_dir),
            OIDC_PROVIDER_ISSUER=self.issuer,
            OIDC_PROVIDER_CLIENT_SECRET=self.client_secret,
            DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
        )
        return env

    def _run(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "tests.oidc_provider", *args],
            cwd=ROOT, env=self.env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def start(self) -> IdentityProvider:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child process owns it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider", "serve", str(self.port), self.redirect_uri],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 120
        discovery = f"{self.issuer}/.well-known/openid-configuration"
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the identity provider exited: {self.log_path.read_text()[-3000:]}"
                )
            try:
                if httpx.get(discovery, timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the identity provider did not start; see {self.log_path}")
            time.sleep(0.2)

    def set_user(self, name: str, password: str, groups: list[str]) -> None:
        """Create or update a user of the provider with exactly ``groups``."""
        self._run("user", name, password, *groups)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
