"""The README and the manual in ``docs/`` stay readable and navigable.

A newcomer reads the README in minutes, so it stays short and names the two commands; every
relative link of the README and the manual leads to a file that exists (and to a heading that
exists, for ``#anchors``); every page of the manual is reachable from its index; measurement
history (commit hashes) stays out of everything but the benchmarks page, where each figure
names the commit it was measured at; and every variable ``.env.example`` lists is documented.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 300
# Pages where figures name the commit they were measured at.
HASHES_ALLOWED = {DOCS / "benchmarks.md"}

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
# A word of 7-40 hex digits with at least one digit and one letter: what a commit looks like
# (plain numbers such as 1048576 are not).
COMMIT_LIKE = re.compile(
    r"(?<![\w/.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-])"
)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks (links and headings inside them are not real)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for match in HEADING.finditer(prose(path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        anchor, n = base, 0
        while anchor in found:
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    return found


def relative_links(path: Path) -> list[str]:
    text = INLINE_CODE.sub("", prose(path.read_text(encoding="utf-8")))
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)  # http:, mailto: ...
    ]


def test_the_readme_is_short_and_names_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < MAX_README_LINES
    assert "make up" in text and "make test" in text


def test_a_license_is_there() -> None:
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in license_text and "the reposearch authors" in license_text


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_page_of_the_manual_is_reachable_from_its_index() -> None:
    reachable, todo = set(), [DOCS / "index.md"]
    while todo:
        page = todo.pop()
        if page in reachable or not page.exists():
            continue
        reachable.add(page)
        for target in relative_links(page):
            file_part = target.partition("#")[0]
            if file_part.endswith(".md"):
                todo.append((page.parent / file_part).resolve())
    pages = set(DOCS.rglob("*.md"))
    assert not sorted(str(p.relative_to(ROOT)) for p in pages - reachable)


@pytest.mark.parametrize(
    "path",
    [p for p in markdown_files() if p not in HASHES_ALLOWED],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_commit_hashes_outside_the_benchmarks(path: Path) -> None:
    found = COMMIT_LIKE.findall(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(ROOT)} names commits {found}: figures and their commits belong in docs/benchmarks.md"
    )


def test_the_benchmarks_name_their_commits() -> None:
    assert COMMIT_LIKE.search((DOCS / "benchmarks.md").read_text(encoding="utf-8"))


def test_every_variable_of_env_example_is_documented() -> None:
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    documented = (DOCS / "operators" / "configuration.md").read_text(encoding="utf-8")
    missing = sorted(name for name in listed if f"`{name}`" not in documented)
    assert not missing, f"docs/operators/configuration.md does not document {missing}"


def test_the_link_checker_sees_links_and_anchors() -> None:
    """The checks above would pass on any text if the patterns matched nothing."""
    sample = "See [a](b.md#c-d), ![pic](x.png) and [site](https://e.org).\n```\n[no](z.md)\n```\n"
    assert LINK.findall(INLINE_CODE.sub("", prose(sample))) == [
        "b.md#c-d",
        "x.png",
        "https://e.org",
    ]
    assert (
        slug("Contextual retrieval (opt-in per `repo`)") == "contextual-retrieval-opt-in-per-repo"
    )
    assert COMMIT_LIKE.findall("at 1686d5e, not 1048576 nor deadbeefs; see x/abc1234") == [
        "1686d5e"
    ]
