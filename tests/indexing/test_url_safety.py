"""URL policy: schemes, credentials, local paths, and addresses judged after resolution."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from dulwich.repo import Repo

from indexing.git.url_safety import (
    UnsafeRepositoryUrl,
    check_repository_url,
    is_public_address,
)

PUBLIC_V4 = "140.82.112.3"
PUBLIC_V6 = "2606:50c0:8000::153"


def fake_resolver(table: dict[str, list[str]]):
    """getaddrinfo stand-in: host -> addresses; unknown hosts do not exist."""

    def resolve(host, port, family=0, type=0, proto=0, flags=0):
        if host == "temporary.example":
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        result = []
        for address in table[host]:
            if ":" in address:
                result.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                result.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return result

    return resolve


def check(url: str, *, private: bool = False, local: bool = False, table=None):
    resolver = fake_resolver(table if table is not None else {"github.com": [PUBLIC_V4]})
    return check_repository_url(
        url, allow_private_hosts=private, allow_local_paths=local, resolve=resolver
    )


def test_public_https_url_is_normalized():
    checked = check("HTTPS://GitHub.com/Org/Repo.git/")
    assert checked.url == "https://github.com/Org/Repo.git"
    assert checked.host == "github.com"
    assert checked.port == 443
    assert checked.display_name == "Org/Repo"
    assert checked.addresses == (PUBLIC_V4,)
    assert checked.local_path is None


def test_non_default_port_and_git_scheme_kept():
    assert check("http://github.com:8080/a/b").url == "http://github.com:8080/a/b"
    assert check("git://github.com/a/b.git").port == 9418
    assert check("https://github.com:443/a/b").url == "https://github.com/a/b"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.5",
        "172.16.3.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.1.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",  # multicast
        "240.0.0.1",  # reserved
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "2002:a00:1::1",  # 6to4 wrapping 10.0.0.1
        "64:ff9b::a00:1",  # NAT64 wrapping 10.0.0.1
    ],
)
def test_names_resolving_to_non_public_addresses_are_refused(address):
    with pytest.raises(UnsafeRepositoryUrl) as info:
        check("https://git.example/org/repo", table={"git.example": [address]})
    assert "host refused" in str(info.value)
    assert not info.value.transient


def test_private_address_message_names_the_address_and_the_setting_that_allows_it():
    with pytest.raises(
        UnsafeRepositoryUrl, match=r"resolves to a private address 10\.0\.0\.5"
    ) as info:
        check("https://git.example/org/repo", table={"git.example": ["10.0.0.5"]})
    assert "REPO_SEARCH_ALLOW_PRIVATE_HOSTS=1" in str(info.value)


def test_one_private_address_among_public_ones_is_refused():
    with pytest.raises(UnsafeRepositoryUrl, match=r"127\.0\.0\.1"):
        check("https://git.example/o/r", table={"git.example": [PUBLIC_V4, "127.0.0.1"]})


def test_public_ipv6_accepted():
    checked = check("https://git.example/o/r", table={"git.example": [PUBLIC_V6]})
    assert checked.addresses == (PUBLIC_V6,)


def test_private_hosts_allowed_by_the_operator():
    checked = check("http://git.internal/o/r", private=True, table={"git.internal": ["10.0.0.5"]})
    assert checked.addresses == ("10.0.0.5",)


@pytest.mark.parametrize("address", ["0.0.0.0", "224.0.0.1", "ff02::1"])
def test_unspecified_and_multicast_refused_even_when_private_allowed(address):
    for private in (True, False):
        with pytest.raises(UnsafeRepositoryUrl, match="non-unicast address") as info:
            check("http://git.internal/o/r", private=private, table={"git.internal": [address]})
        # The setting would not help, so the message does not name it.
        assert "REPO_SEARCH_ALLOW_PRIVATE_HOSTS" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://0x7f.1/org/repo",
        "http://2130706433/org/repo",
        "http://127.1/org/repo",
        "http://017700000001/org/repo",
        "http://[::1]/org/repo",
        "http://[::ffff:127.0.0.1]/org/repo",
        "http://localhost/org/repo",
        "http://LOCALHOST./org/repo",
        "http://0.0.0.0/org/repo",
        "http://169.254.169.254/latest/meta-data",
    ],
)
def test_loopback_spellings_refused_with_the_real_resolver(url):
    with pytest.raises(UnsafeRepositoryUrl, match="host refused"):
        check_repository_url(url, allow_private_hosts=False, allow_local_paths=False)


def test_real_resolver_allows_loopback_when_private_hosts_allowed():
    checked = check_repository_url(
        "http://127.0.0.1:8000/org/repo.git", allow_private_hosts=True, allow_local_paths=False
    )
    assert checked.url == "http://127.0.0.1:8000/org/repo.git"
    assert checked.display_name == "org/repo"


def test_unknown_host_is_reported_as_not_found():
    with pytest.raises(UnsafeRepositoryUrl, match=r"^host not found: nosuch\.example$") as info:
        check("https://nosuch.example/o/r")
    assert not info.value.transient


def test_temporary_dns_failure_is_transient():
    with pytest.raises(UnsafeRepositoryUrl) as info:
        check("https://temporary.example/o/r")
    assert info.value.transient


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://github.com/o/r", "scheme 'ftp' is not supported; use https, http or git"),
        ("javascript:alert(1)", "scheme 'javascript' is not supported"),
        ("data:text/plain,x", "scheme 'data' is not supported"),
        ("ssh://git@github.com/o/r.git", "ssh URLs are not supported"),
        ("git@github.com:org/repo.git", "ssh URLs are not supported"),
        ("github.com:org/repo.git", "ssh URLs are not supported"),
        ("https://github.com", "has no repository path"),
        ("https://github.com/", "has no repository path"),
        ("https://github.com/o/r?x=1", "query strings are not supported"),
        ("https://github.com:99999/o/r", "port in the repository URL is invalid"),
        ("https://github.com/o/../../r", "must not contain"),
        ("https://git hub.com/o/r", "spaces or control characters"),
        ("https://github.com/o\n/r", "spaces or control characters"),
        ("https://github.com/o/r\x00", "spaces or control characters"),
        ("", "empty"),
        ("https:///o/r", "has no host"),
    ],
)
def test_malformed_or_unsupported_urls(url, message):
    with pytest.raises(UnsafeRepositoryUrl) as info:
        check(url)
    assert message in str(info.value)


def test_credentials_in_url_refused_without_echoing_them():
    with pytest.raises(UnsafeRepositoryUrl) as info:
        check("https://alice:s3cr3t-token@github.com/o/r.git")
    assert "credentials in the URL are not allowed" in str(info.value)
    assert "s3cr3t" not in str(info.value)
    with pytest.raises(UnsafeRepositoryUrl, match="credentials"):
        check("https://ghp_tokenonly@github.com/o/r.git")


def test_local_paths_refused_unless_allowed(tmp_path: Path):
    for location in (str(tmp_path), f"file://{tmp_path}", "/etc"):
        with pytest.raises(UnsafeRepositoryUrl, match="REPO_SEARCH_ALLOW_LOCAL_PATHS=1"):
            check(location)


@pytest.mark.parametrize("location", ["./repo", "repo", "1", "~/repo", "../x", "a/b.git"])
def test_relative_paths_are_not_resolved_against_the_servers_directory(location: str) -> None:
    for local in (False, True):
        with pytest.raises(UnsafeRepositoryUrl, match="is not a URL or absolute path"):
            check(location, local=local)


def test_local_path_must_be_an_existing_git_repository(tmp_path: Path):
    # Missing or not a repository: the same answer, so errors do not tell which server paths
    # exist, and the path as typed, not resolved through a symlink.
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    answers = []
    for typed in (tmp_path / "missing", tmp_path, tmp_path / "link"):
        with pytest.raises(UnsafeRepositoryUrl) as refused:
            check(str(typed), local=True)
        answers.append(str(refused.value).replace(str(typed), "PATH"))
        assert str(refused.value) == f"{typed} is not a git repository on this server"
    assert len(set(answers)) == 1
    assert "elsewhere" not in answers[0]
    with pytest.raises(UnsafeRepositoryUrl, match="must not name a host"):
        check("file://otherhost/srv/repo.git", local=True)

    bare = tmp_path / "mirror.git"
    Repo.init_bare(str(bare), mkdir=True)
    checked = check(f"file://{bare}", local=True)
    assert checked.local_path == str(bare.resolve())
    assert checked.url == f"file://{bare.resolve()}"
    assert checked.display_name == "mirror"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        (PUBLIC_V6, True),
        ("::ffff:8.8.8.8", True),
        ("127.0.0.1", False),
        ("::ffff:192.168.0.1", False),
        ("192.0.2.1", False),  # documentation range
        ("198.18.0.1", False),  # benchmarking range
        ("fd12:3456::1", False),
    ],
)
def test_is_public_address(address, public):
    assert is_public_address(address) is public
