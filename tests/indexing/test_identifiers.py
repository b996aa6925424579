"""Identifier splitting shared by the tsvector builder and the query parser."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexing.identifiers import identifier_words, searchable_text, split_identifier


@pytest.mark.parametrize(
    "spelling",
    [
        "parseHttpHeader",
        "parse_http_header",
        "ParseHTTPHeader",
        "parse-http-header",
        "parse http header",
        "PARSE_HTTP_HEADER",
        "parse.http.header",
        "Parse::Http::Header",
    ],
)
def test_every_spelling_yields_the_same_words(spelling: str) -> None:
    words = identifier_words(spelling)
    assert {"parse", "http", "header"} <= set(words)


def test_whole_identifier_kept_as_one_token_in_every_compound_spelling() -> None:
    for spelling in ("parseHttpHeader", "parse_http_header", "ParseHTTPHeader"):
        assert identifier_words(spelling) == ["parse", "http", "header", "parsehttpheader"]
    # separate words are separate words: no invented compound
    assert identifier_words("parse http header") == ["parse", "http", "header"]


def test_dotted_names_split_and_kept_whole() -> None:
    assert identifier_words("os.path.join") == ["os", "path", "join", "ospathjoin"]
    words = identifier_words("self.client.sendRequest()")
    assert words[:4] == ["self", "client", "send", "request"]
    assert "sendrequest" in words and "selfclientsendrequest" in words


def test_acronyms_and_numbers() -> None:
    assert split_identifier("HTTPServer") == ["http", "server"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]
    assert split_identifier("getV2Config") == ["get", "v", "2", "config"]
    assert identifier_words("sha256") == ["sha", "256", "sha256"]
    assert "utf8" in identifier_words("decodeUtf8")
    assert identifier_words("404") == ["404"]


def test_non_ascii_words_stay_whole() -> None:
    assert identifier_words("naïveBayes Größe") == ["naïve", "bayes", "naïvebayes", "größe"]
    assert identifier_words("İstanbul") == ["istanbul"]  # no combining dot left behind


def test_order_and_duplicates_kept_for_ranking_unique_for_queries() -> None:
    text = "retry(retry_count); retry()"
    assert identifier_words(text) == ["retry", "retry", "count", "retrycount", "retry"]
    assert identifier_words(text, unique=True) == ["retry", "count", "retrycount"]


def test_noise_is_bounded() -> None:
    digest = "a" * 200
    assert identifier_words(digest) == []  # longer than any real identifier
    huge = "word " * 1_000_000
    assert len(identifier_words(huge, max_chars=1000)) == 200


@given(st.text(max_size=300))
def test_searchable_text_survives_the_postgres_parser_unchanged(text: str) -> None:
    # PostgreSQL's default text-search parser splits at `_ . - :` and other
    # punctuation: tokens must be runs of letters and digits only, lowercase.
    out = searchable_text(text)
    for token in out.split():
        assert re.fullmatch(r"[^\W_]+", token), token
        assert token == token.lower()
    assert searchable_text(text) == out  # deterministic
