"""``manage.py ask``: the answer with its sources, or where to look when no model answers."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ask", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_prints_the_answer_then_the_cited_sources(shop, chat_model: Any) -> None:
    chat_model.queue_chat("Delays double each attempt [1].")
    out, _ = run("how is the retry delay computed")
    assert out.startswith("Delays double each attempt [1].")
    assert "Sources:" in out and "[1] acme/shop:src/" in out
    assert f"https://github.com/acme/shop/blob/{shop.last_indexed_commit}/" in out


def test_without_a_chat_model_prints_where_to_look_and_fails(shop, chat_model: Any) -> None:
    chat_model.stop()
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("ask", "how is the retry delay computed", stdout=out, stderr=err)
    assert exit_info.value.code == 3
    assert "no chat model could answer" in err.getvalue()
    assert "acme/shop:src/" in out.getvalue()


def test_repo_takes_a_name_as_the_api_does(shop, chat_model: Any) -> None:
    chat_model.queue_chat("Delays double each attempt [1].")
    out, _ = run("how is the retry delay computed", "--repo", "acme/shop")
    assert "[1] acme/shop:src/" in out
    with pytest.raises(CommandError, match="--repo: no repository named 'acme/shp'"):
        run("how is the retry delay computed", "--repo", "acme/shp")
