"""READMEs on tree pages (``frontend.readme``): a small Markdown subset, and nothing from the
repository ever becomes markup or a script link."""

from __future__ import annotations

import pytest

from frontend.readme import find_readme, relative_resolver, render_readme


def resolve(target: str) -> str:
    return relative_resolver("docs", lambda path: f"/at/{path}")(target)


def test_the_readme_is_found_by_preference_and_any_case() -> None:
    assert find_readme(["a.py", "README.txt", "readme.md"]) == "readme.md"
    assert find_readme(["Readme.RST", "README"]) == "Readme.RST"
    assert find_readme(["README"]) == "README"
    assert find_readme(["READ.md", "notes.txt"]) is None


def test_markdown_renders_its_common_parts() -> None:
    html = render_readme(
        "README.md",
        b"# Title\n\nText with *em*, **strong**, `a < b` and a [link](guide.md#intro).\n\n"
        b"1. first\n2. second\n\n> quoted\n\n    indented code\n\n---\n",
        resolve,
    )
    assert "<h2>Title</h2>" in html
    assert "<em>em</em>" in html and "<strong>strong</strong>" in html
    assert "<code>a &lt; b</code>" in html
    assert '<a href="/at/docs/guide.md#intro" rel="noopener noreferrer">link</a>' in html
    assert "<ol><li>first</li><li>second</li></ol>" in html
    assert "<blockquote><p>quoted</p></blockquote>" in html
    assert "<pre><code>indented code</code></pre>" in html and "<hr>" in html


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JaVaScript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "vbscript:msgbox",
        "//evil.example/x",
        "file:///etc/passwd",
    ],
)
def test_no_link_leaves_the_safe_schemes(link: str) -> None:
    html = render_readme("README.md", f"[click]({link}) ![img]({link})".encode(), resolve)
    assert "href" not in html and "click" in html


def test_raw_html_and_quotes_stay_text() -> None:
    source = b'<img src=x onerror=alert(1)> [a](https://x.example/"onmouseover="alert(1))\n'
    html = render_readme("README.md", source, resolve)
    assert "<img" not in html and "&lt;img" in html
    assert 'onmouseover="' not in html
    plain = render_readme("README.txt", b"<b>hi</b>", resolve)
    assert plain == '<pre class="readme-text">&lt;b&gt;hi&lt;/b&gt;</pre>'


def test_relative_links_stay_inside_the_repository() -> None:
    assert resolve("../README.md") == "/at/README.md"
    assert resolve("../../../etc/passwd") == "/at/etc/passwd"
    html = render_readme("README.md", b"[up](#usage)", resolve)
    assert '<a href="#usage" rel="noopener noreferrer">up</a>' in html
