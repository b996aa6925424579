"""A directory's README on its tree page, rendered safely.

``README.md`` (or ``.markdown``) is rendered with a small Markdown subset written here (no
Markdown library is a runtime dependency): headings, paragraphs, lists, block quotes, fenced
and indented code, inline code, emphasis and links. Everything from the repository is escaped
first, so raw HTML in a README shows as text, never as markup; links keep only ``http``,
``https``, ``mailto``, in-page anchors and relative paths (made permalinks at the commit);
images show as links (no remote image is loaded). Any other README is preformatted text.
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

MAX_README_BYTES = 256 * 1024
_NAMES = ("readme.md", "readme.markdown", "readme.rst", "readme.txt", "readme")
_MARKDOWN = (".md", ".markdown")

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"(!?)\[([^\]\n]+)\]\(([^)\s]+)(?:\s+&quot;[^\n]*?&quot;)?\)")
_AUTOLINK = re.compile(r"&lt;(https?://[^\s&]+)&gt;")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EM = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")

LinkResolver = Callable[[str], str]


def find_readme(names: list[str]) -> str | None:
    """The README among a directory's file names, by preference; None when there is none."""
    by_lower = {name.lower(): name for name in names}
    return next((by_lower[n] for n in _NAMES if n in by_lower), None)


def render_readme(name: str, data: bytes, resolve: LinkResolver) -> SafeString:
    """HTML for a README's bytes; ``resolve`` turns a relative link into an address."""
    text = data[:MAX_README_BYTES].decode("utf-8", errors="replace")
    if name.lower().endswith(_MARKDOWN):
        return render_markdown(text, resolve)
    return mark_safe(f'<pre class="readme-text">{escape(text)}</pre>')  # noqa: S308 - escaped


def _safe_href(target: str, resolve: LinkResolver) -> str:
    target = html.unescape(target)
    parts = urlsplit(target)
    if parts.scheme in ("http", "https", "mailto"):
        return target
    if parts.scheme or target.startswith("//") or "\\" in target:
        return ""
    if target.startswith("#"):
        return target
    return resolve(target)


def _inline(text: str, resolve: LinkResolver) -> str:
    pieces: list[str] = []
    position = 0
    for found in _CODE_SPAN.finditer(text):
        pieces.append(_inline_plain(text[position : found.start()], resolve))
        pieces.append(f"<code>{escape(found.group(2).strip())}</code>")
        position = found.end()
    pieces.append(_inline_plain(text[position:], resolve))
    return "".join(pieces)


def _inline_plain(text: str, resolve: LinkResolver) -> str:
    out = str(escape(text))

    def link(found: re.Match[str]) -> str:
        label = found.group(2)
        href = _safe_href(found.group(3), resolve)
        if not href:
            return label
        return f'<a href="{escape(href)}" rel="noopener noreferrer">{label}</a>'

    out = _LINK.sub(link, out)
    out = _AUTOLINK.sub(
        lambda m: f'<a href="{m.group(1)}" rel="noopener noreferrer">{m.group(1)}</a>', out
    )
    out = _STRONG.sub(r"<strong>\2</strong>", out)
    return _EM.sub(r"<em>\2</em>", out)


def render_markdown(text: str, resolve: LinkResolver) -> SafeString:
    out: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    list_tag = ""
    quote: list[str] = []
    lines = text.replace("\r\n", "\n").split("\n")

    def flush() -> None:
        nonlocal list_tag
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph), resolve)}</p>")
            paragraph.clear()
        if items:
            body = "".join(f"<li>{_inline(item, resolve)}</li>" for item in items)
            out.append(f"<{list_tag}>{body}</{list_tag}>")
            items.clear()
            list_tag = ""
        if quote:
            out.append(f"<blockquote><p>{_inline(' '.join(quote), resolve)}</p></blockquote>")
            quote.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        fence = _FENCE.match(line)
        if fence:
            flush()
            code: list[str] = []
            while index < len(lines) and not lines[index].strip().startswith(fence.group(1)):
                code.append(lines[index])
                index += 1
            index += 1
            out.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
            continue
        if not line.strip():
            flush()
            continue
        if line.startswith(("    ", "\t")) and not paragraph and not items:
            flush()
            code = [line[4:] if line.startswith("    ") else line[1:]]
            while index < len(lines) and (
                lines[index].startswith(("    ", "\t")) or not lines[index].strip()
            ):
                code.append(
                    lines[index][4:] if lines[index].startswith("    ") else lines[index][1:]
                )
                index += 1
            out.append(f"<pre><code>{escape(chr(10).join(code).rstrip())}</code></pre>")
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = min(len(heading.group(1)) + 1, 6)  # the page's own title is the h1
            out.append(f"<h{level}>{_inline(heading.group(2), resolve)}</h{level}>")
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            continue
        bullet, numbered = _BULLET.match(line), _NUMBERED.match(line)
        if bullet or numbered:
            tag = "ul" if bullet else "ol"
            if paragraph or quote or (list_tag and list_tag != tag):
                flush()
            list_tag = tag
            items.append((bullet or numbered).group(1))  # type: ignore[union-attr]
            continue
        if line.lstrip().startswith(">"):
            if paragraph or items:
                flush()
            quote.append(line.lstrip()[1:].strip())
            continue
        if items and line.startswith((" ", "\t")):
            items[-1] += " " + line.strip()
            continue
        if items or quote:
            flush()
        paragraph.append(line.strip())
    flush()
    return mark_safe("\n".join(out))  # noqa: S308 - built from escaped text


def relative_resolver(directory: str, link: Callable[[str], str]) -> LinkResolver:
    """Relative README links as addresses inside the repository at the same commit; a link
    out of the repository's root goes nowhere (``#``)."""

    def resolve(target: str) -> str:
        path, _, fragment = target.partition("#")
        path = path.split("?", 1)[0]
        joined = posixpath.normpath(posixpath.join("/", directory, path))
        if joined.startswith("//") or ".." in joined.split("/"):
            return "#"
        address = link(joined.lstrip("/"))
        return address + (f"#{fragment}" if fragment else "")

    return resolve
