"""Fetch credentials and network policy: the token, redirects, certificates, private hosts."""

from __future__ import annotations

import logging
import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from indexing.git.errors import (
    AuthenticationFailed,
    GitFetchError,
    HostRefused,
)
from tests.indexing.git_fetch_support import TOKEN, fetch, fetch_again, files_under
from tests.indexing.git_server import (
    GitHttpServer,
    commit_files,
)


def test_private_host_refused_by_policy_before_anything_is_created(server, tmp_path):
    target = tmp_path / "out"
    with pytest.raises(HostRefused, match=r"private address 127\.0\.0\.1"):
        fetch(server.url("org/repo.git"), target, allow_private_hosts=False)
    assert not target.exists()
    assert server.requests == []


def test_dns_rebinding_the_fetch_connects_only_to_checked_addresses(server, tmp_path):
    """First answer public, second answer loopback: the connection is refused."""
    answers = iter(["8.8.8.8", "127.0.0.1", "127.0.0.1"])

    def rebinding_resolver(host, port, family=0, type=0, proto=0, flags=0):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    url = f"http://rebind.example:{server.port}/org/repo.git"
    with pytest.raises(HostRefused, match=r"private address 127\.0\.0\.1"):
        fetch(url, tmp_path / "out", allow_private_hosts=False, resolve=rebinding_resolver)
    assert server.requests == []
    assert not (tmp_path / "out").exists()


def test_token_sent_as_basic_auth_and_never_written(source, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    target = tmp_path / "out"
    with GitHttpServer({"org/private.git": source}, auth=("x-access-token", TOKEN)) as private:
        url = private.url("org/private.git")
        with pytest.raises(AuthenticationFailed, match="HTTP 401") as info:
            fetch(url, tmp_path / "anonymous")
        assert not info.value.transient
        with pytest.raises(AuthenticationFailed) as wrong:
            fetch(url, tmp_path / "wrong", token="not-the-token")
        assert "not-the-token" not in str(wrong.value)

        result = fetch(url, target, token=TOKEN)
        assert private.authorization_headers[-1].startswith("Basic ")

        commit_files(source, {"new.txt": "x"}, parent=source.refs[b"refs/heads/main"])
        update = fetch_again(target, url, token=TOKEN)
        assert update.changed

    assert result.url == url
    for path in files_under(target):
        assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in caplog.text
    assert not (tmp_path / "anonymous").exists()


def test_token_withheld_from_hosts_not_listed(source, tmp_path):
    with GitHttpServer({"org/private.git": source}, auth=("x-access-token", TOKEN)) as private:
        with pytest.raises(AuthenticationFailed):
            fetch(
                private.url("org/private.git"),
                tmp_path / "out",
                token=TOKEN,
                token_hosts=["github.com"],
            )
        assert private.authorization_headers == []


def test_token_is_not_forwarded_when_redirected_to_another_origin(source, tmp_path):
    """A redirect to another host:port gets no credentials (dulwich scopes them by origin)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    with GitHttpServer({"org/repo.git": source}) as other_origin:

        def redirect(environ, start_response):
            query = environ.get("QUERY_STRING", "")
            location = other_origin.url("org/repo.git") + "/info/refs" + f"?{query}" * bool(query)
            start_response("302 Found", [("Location", location), ("Content-Length", "0")])
            return [b""]

        redirector = make_server("127.0.0.1", 0, redirect, handler_class=QuietHandler)
        thread = threading.Thread(target=redirector.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{redirector.server_address[1]}/org/repo.git"
            result = fetch(url, tmp_path / "out", token=TOKEN)
        finally:
            redirector.shutdown()
            redirector.server_close()
        assert other_origin.requests  # the fetch did go to the redirect target
        assert other_origin.authorization_headers == []
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_verifies_certificates_through_the_guarded_connection(source, tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    with GitHttpServer({"org/repo.git": source}) as server:
        server._server.socket = context.wrap_socket(server._server.socket, server_side=True)
        url = server.url("org/repo.git").replace("http://", "https://")

        with pytest.raises(GitFetchError, match="TLS certificate verification failed") as info:
            fetch(url, tmp_path / "untrusted")
        assert not info.value.transient
        assert not (tmp_path / "untrusted").exists()

        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # how operators trust a private CA
        result = fetch(url, tmp_path / "trusted")
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
