"""With ``prose_sections`` documentation pages are chunked by section, named by their heading."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.chunking import ChunkBudget, chunk_file
from indexing.models import Chunk
from tests.indexing.real_run import fetch_and_index, mirror


def outline(text: str, language: str, **kwargs: object) -> list[tuple[int, int, str, str | None]]:
    return [
        (p.start_line, p.end_line, p.kind, p.symbol)
        for p in chunk_file(text, language, "docs/page", prose_sections=True, **kwargs)  # type: ignore[arg-type]
    ]


def test_markdown_sections_are_named_by_their_headings() -> None:
    text = (
        "Intro before any heading.\n\n"
        "# Deploying\n\nRun it behind a proxy.\n\n"
        "## With Gunicorn\n\n```sh\n# not a heading: a shell comment\ngunicorn app:app\n```\n"
    )
    assert outline(text, "markdown") == [
        (1, 1, "section", None),
        (3, 5, "section", "Deploying"),
        (7, 12, "section", "With Gunicorn"),
    ]


def test_restructuredtext_titles_with_and_without_overline() -> None:
    text = (
        "=========\nTutorial\n=========\n\nWelcome.\n\n"
        "Installing\n----------\n\npip install it\n\n"
        "Not a title because the underline is short\n---\n"
    )
    assert outline(text, "rst") == [
        (1, 5, "section", "Tutorial"),
        (7, 13, "section", "Installing"),
    ]


def test_a_long_section_is_split_at_paragraphs_and_keeps_its_heading() -> None:
    paragraphs = "\n\n".join(f"Paragraph {n} line one.\nParagraph {n} line two." for n in range(8))
    text = f"# Configuration\n\n{paragraphs}\n"
    pieces = outline(text, "markdown", budget=ChunkBudget(max_lines=8, max_chars=4000))
    assert len(pieces) > 1
    assert {kind for _, _, kind, _ in pieces} == {"section"}
    assert {symbol for *_, symbol in pieces} == {"Configuration"}
    assert pieces[0][0] == 1 and pieces[-1][1] == text.count("\n")


def test_a_page_without_headings_keeps_line_windows() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 151))
    assert [kind for _, _, kind, _ in outline(text, "markdown")] == ["window", "window"]


@pytest.mark.django_db
def test_an_indexed_page_is_chunked_by_section_as_shipped(tmp_path: Path) -> None:
    """With the settings as shipped (``REPO_SEARCH_DOC_SECTIONS`` untouched), a repository's
    Markdown page is stored as one chunk per section, named by its heading: what a search hit
    on the page shows."""
    page = "# Deploying\n\nRun it behind a proxy.\n\n## Gunicorn\n\nworkers = 4\n"
    job = fetch_and_index(mirror(tmp_path, {"docs/deploy.md": page}))
    stored = Chunk.objects.filter(repository=job.repository).order_by("start_line")
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in stored] == [
        ("section", "Deploying", 1, 3),
        ("section", "Gunicorn", 5, 7),
    ]


def test_the_setting_turns_sections_on_for_the_indexer(settings) -> None:  # type: ignore[no-untyped-def]
    from indexing.services.stages.fetch_and_index import _chunks_for
    from indexing.walking import WalkedFile

    page = WalkedFile(
        path="docs/deploy.md", sha="0" * 40, size=60, language="markdown", is_test=False,
        is_doc=True, text="# Deploying\n\nRun it behind a proxy.\n\n## Gunicorn\n\nworkers\n",
    )  # fmt: skip
    settings.REPO_SEARCH_DOC_SECTIONS = False
    assert [(c.kind, c.symbol) for c in _chunks_for(page)] == [("window", "")]
    settings.REPO_SEARCH_DOC_SECTIONS = True
    assert [(c.kind, c.symbol) for c in _chunks_for(page)] == [
        ("section", "Deploying"),
        ("section", "Gunicorn"),
    ]
