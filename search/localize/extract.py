"""What an issue names: paths, stack frames, identifiers, error messages, code blocks.

``extract_clues(text)`` reads an issue (or a bare stack trace) and returns ``IssueClues``: each
kind de-duplicated and weighted, strongest first, so ``search.localize.service`` can look the
strong ones up exactly (file names, definitions, literal error text) and hand the prose to the
hybrid search.

- **Frames**: Python's ``File "x.py", line N, in func``, JavaScript's ``at func (x.js:N:C)`` and
  Go's ``pkg.Func(...)`` followed by ``\\tpath/x.go:N``. Paths are normalised
  (``site-packages/``, a checkout's absolute prefix and ``./`` are cut) so that their tail can be
  matched against a repository's paths. The innermost frame (Python's last, JS/Go's first)
  weighs most.
- **Paths**: ``astropy/io/fits/card.py`` or ``card.py:120`` written anywhere, and dotted module
  names (``django.db.models.query``), which become candidate paths (``django/db/models/query.py``).
- **Identifiers**: ```backticked``` names (strongest), names in frames, CamelCase and snake_case
  words of the prose, and names called or defined in code blocks; a repeated name gains weight.
  Builtins, keywords and a few words every codebase has are left out.
- **Errors**: ``ValueError: message`` lines (the message's longest literal part is searched
  exactly; the exception type counts as a weak identifier).
- **Summary**: the title and the first paragraph of prose, without code, for the hybrid search.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field

MAX_SUMMARY_CHARS = 600
SOURCE_EXTENSIONS = (
    "py|pyx|pyi|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|scala|rb|php|c|h|cc|cpp|hpp|cxx|cs|swift|m|"
    "mm|lua|pl|pm|r|jl|ex|exs|erl|hs|ml|clj|dart|vue|svelte|sh|sql|cfg|toml|ini|yaml|yml|json|rst"
)

# Python: File "/x/y.py", line 12, in func
_PY_FRAME = re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[\w<>.]+))?')
# JavaScript: at func (/x/y.js:12:5)  |  at /x/y.js:12:5
_JS_FRAME = re.compile(
    r"^\s*at (?:(?P<func>[\w$.<>\[\] ]+?) \()?(?P<path>[^\s()]+\.(?:js|jsx|mjs|cjs|ts|tsx))"
    r":(?P<line>\d+)(?::\d+)?\)?\s*$",
    re.M,
)
# Go: pkg/path.Func(0x1, ...)\n\t/abs/path/file.go:123 +0x1d
_GO_FRAME = re.compile(
    r"^(?P<func>[\w./*()-]+)\([^\n]*\)\s*\n\s+(?P<path>[^\s:]+\.go):(?P<line>\d+)", re.M
)
_PATH = re.compile(
    r"(?<![\w/.-])(?P<path>(?:[\w.-]+/)*[\w.-]*\w\.(?:" + SOURCE_EXTENSIONS + r"))"
    r"(?::(?P<line>\d+))?(?![\w/])"
)
_MODULE = re.compile(r"(?<![\w./])(?P<mod>[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,})(?!\.?[\w(])")
_BACKTICK = re.compile(r"(?<!`)`([^`\n]{1,120})`(?!`)")
_FENCE = re.compile(r"^\s*(```|~~~)[^\n]*\n(?P<body>.*?)^\s*\1\s*$", re.M | re.S)
_ERROR = re.compile(
    r"^\s*(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Fault|Failure))"
    r"(?::[ \t]*(?P<message>[^\n]*))?$",
    re.M,
)
_RAISED = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::[ \t]*(?P<message>.*))?$")
# CamelCase, lowerCamel, and names that open with an acronym (HTTPAdapter, MCodePrinter: two or
# more capitals, then a lower-case run of two or more, so that "URLs" and "APIs" are not names)
_CAMEL = re.compile(
    r"(?<!\w)([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z]+[A-Z][A-Za-z0-9]+"
    r"|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*)\b"
)
_SNAKE = re.compile(r"(?<!\w)(_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_{0,2})\b")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?(?![\w.])")
_CALLED = re.compile(r"\b([A-Za-z_]\w{2,})\(")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_SOURCE_SUFFIX = re.compile(r"\.(?:" + SOURCE_EXTENSIONS + r")$")

# Names every codebase has, and Python's builtins: they point at nothing in particular.
_COMMON = """self cls none true false null undefined nil print len str int float bool dict list set
    tuple object type range open super isinstance getattr setattr hasattr repr format return
    import from main init __init__ __main__ __call__ __repr__ __str__ test tests setup module
    args kwargs error exception value values key keys item items data result results name path
    file line lines run get set call append extend update copy join split strip lower upper
    sorted reversed map filter zip enumerate min max sum abs any all next iter id hash vars dir
    console log require async await new this function var let const def class assert raise
    lambda pass yield with else elif while for try except finally global nonlocal del is not and
    or in if np pd plt os sys re json http https www com org github e.g i.e etc todo fixme
    python traceback most recent call last"""
COMMON_NAMES = frozenset(_COMMON.split()) | frozenset(name.lower() for name in dir(builtins))


@dataclass(frozen=True)
class Frame:
    """One stack frame: the path as written (normalised), its line and function."""

    path: str
    line: int
    function: str
    weight: float


@dataclass(frozen=True)
class Mention:
    """A path (or dotted module) the issue names; ``candidates`` are the repository paths it may
    be (a module ``a.b.c`` may be ``a/b/c.py`` or ``a/b/c/__init__.py``)."""

    text: str
    candidates: tuple[str, ...]
    line: int | None
    weight: float


@dataclass(frozen=True)
class Identifier:
    name: str  # the defined name to look up: the last part of a dotted name
    qualified: str  # as written (``QuerySet.filter``)
    weight: float
    sources: tuple[str, ...]  # "backticks", "frame", "prose", "code", "error", "module"


@dataclass(frozen=True)
class ErrorLine:
    type: str  # ValueError
    message: str  # as written
    literal: str  # the message's longest constant part (what the code's source would hold)


@dataclass
class IssueClues:
    summary: str
    frames: list[Frame] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    identifiers: list[Identifier] = field(default_factory=list)
    errors: list[ErrorLine] = field(default_factory=list)
    code_blocks: list[str] = field(default_factory=list)

    def as_document(self) -> dict[str, object]:
        """What was read from the issue, for the answer (the caller can check it)."""
        return {
            "paths": [m.text for m in self.mentions],
            "frames": [f"{f.path}:{f.line} in {f.function}" for f in self.frames],
            "identifiers": [i.qualified for i in self.identifiers],
            "error_lines": [f"{e.type}: {e.message}".rstrip(": ") for e in self.errors],
            "code_blocks": len(self.code_blocks),
        }


def normalise_path(path: str) -> str:
    """``path`` as a repository would hold it: no ``site-packages/`` prefix, no leading ``/``,
    ``./`` or Windows drive, forward slashes."""
    path = path.strip().replace("\\", "/")
    path = re.sub(r"^[A-Za-z]:/", "", path)
    path = re.sub(r"^(?:webpack|file)://+", "", path)
    for marker in ("site-packages/", "dist-packages/", "node_modules/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
    path = re.sub(r"^(?:\./)+", "", path)
    return path.lstrip("/")


def _strip_fences(text: str) -> tuple[str, list[str]]:
    blocks = [m.group("body") for m in _FENCE.finditer(text)]
    return _FENCE.sub("\n", text), blocks


def _frames(text: str) -> list[Frame]:
    found: list[tuple[str, int, str]] = []
    python = [
        (normalise_path(m["path"]), int(m["line"]), m["func"] or "")
        for m in _PY_FRAME.finditer(text)
    ]
    # A Python traceback lists the innermost call last; JavaScript and Go first.
    found.extend(reversed(python))
    found.extend(
        (normalise_path(m["path"]), int(m["line"]), (m["func"] or "").strip())
        for m in _JS_FRAME.finditer(text)
    )
    found.extend(
        (normalise_path(m["path"]), int(m["line"]), m["func"].rsplit(".", 1)[-1].strip("()*"))
        for m in _GO_FRAME.finditer(text)
    )
    frames: list[Frame] = []
    seen: set[tuple[str, int]] = set()
    for path, line, function in found:
        if (path, line) in seen or path.startswith("<"):
            continue
        seen.add((path, line))
        # The innermost frame weighs 1.0, the next 0.8, ... down to 0.4.
        frames.append(Frame(path, line, function, max(0.4, 1.0 - 0.2 * len(frames))))
    return frames


def _module_candidates(module: str) -> tuple[str, ...]:
    parts = module.split(".")
    base = "/".join(parts)
    return (f"{base}.py", f"{base}/__init__.py", f"{'/'.join(parts[:-1])}.py")


def _mentions(prose: str, frames: list[Frame]) -> list[Mention]:
    framed = {f.path for f in frames}
    mentions: dict[str, Mention] = {}
    for m in _PATH.finditer(prose):
        path = normalise_path(m["path"])
        if path in framed or ("/" not in path and path.count(".") > 1):
            continue  # a frame says it better; "e.g.py"-like words are not paths
        line = int(m["line"]) if m["line"] else None
        old = mentions.get(path)
        weight = 1.0 if "/" in path else 0.7
        mentions[path] = Mention(path, (path,), line or (old.line if old else None), weight)
    for m in _MODULE.finditer(prose):
        module = m["mod"]
        if any(module.endswith("." + ext) for ext in SOURCE_EXTENSIONS.split("|")):
            continue
        if module not in mentions:
            mentions[module] = Mention(module, _module_candidates(module), None, 0.6)
    return sorted(mentions.values(), key=lambda x: -x.weight)


def _add(
    names: dict[str, tuple[str, float, list[str]]], qualified: str, weight: float, source: str
) -> None:
    qualified = qualified.strip().removesuffix("()").strip("`'\" ")
    name = qualified.rsplit(".", 1)[-1]
    container = qualified.rsplit(".", 2)[-2] if "." in qualified else ""
    if container[:1].isupper() and source != "container":
        _add(names, container, weight / 2, "container")  # Card of Card.fromstring, Request.__init__
    if not _NAME.match(name) or len(name) < 3 or name.lower() in COMMON_NAMES:
        return
    if name.isupper() and len(name) <= 4:
        return  # HTTP, URL, ...: acronyms, not definitions
    if name in names:
        old_q, old_w, sources = names[name]
        if source not in sources:
            sources.append(source)
        # A name mentioned again gains a little; the strongest mention counts fully.
        names[name] = (max(old_q, qualified, key=len), max(old_w, weight) + 0.25, sources)
    else:
        names[name] = (qualified, weight, [source])


def _identifiers(
    prose: str, blocks: list[str], frames: list[Frame], errors: list[ErrorLine]
) -> list[Identifier]:
    names: dict[str, tuple[str, float, list[str]]] = {}
    for m in _BACKTICK.finditer(prose):
        inner = m.group(1).strip()
        dotted = _DOTTED.fullmatch(inner)
        if _NAME.match(inner.removesuffix("()")) or dotted:
            _add(names, inner, 3.0, "backticks")
        else:  # a snippet in backticks: the names it calls
            for call in _CALLED.finditer(inner):
                _add(names, call.group(1), 1.5, "backticks")
    for frame in frames:
        _add(names, frame.function, 1.5 + frame.weight, "frame")
    plain = _BACKTICK.sub(" ", prose)
    for pattern in (_CAMEL, _SNAKE):
        for m in pattern.finditer(plain):
            _add(names, m.group(1), 1.5, "prose")
    for m in _DOTTED.finditer(plain):
        written = m.group(1)
        if not _MODULE.fullmatch(written) and not _SOURCE_SUFFIX.search(written):
            _add(names, written, 1.5, "prose")
    for block in blocks:
        code = _PY_FRAME.sub(" ", block)
        for m in _CALLED.finditer(code):
            _add(names, m.group(1), 1.0, "code")
    for error in errors:
        _add(names, error.type, 0.5, "error")
    ranked = sorted(names.items(), key=lambda kv: (-kv[1][1], kv[0]))
    return [Identifier(name, q, round(w, 2), tuple(s)) for name, (q, w, s) in ranked]


def _literal(message: str) -> str:
    """The longest part of ``message`` that holds no value of the run: cut at quotes,
    numbers and reprs (``'foo'``, ``42``, ``<Obj at 0x..>``)."""
    parts = re.split(
        r"'[^']*'|\"[^\"]*\"|<[^>]*>|\b0x[0-9a-f]+\b|\b\d[\d.,]*\b|[{}()\[\]]", message
    )
    best = max((p.strip(" :,.;-") for p in parts), key=len, default="")
    return best if len(best) >= 12 and " " in best else ""


def _raised_after_tracebacks(text: str) -> list[tuple[str, str]]:
    """(type, message) of the line that ends each Python traceback: the first unindented line
    after its frames, whatever the exception is called (``PoolExhausted: ...``)."""
    found = []
    for block in text.split("Traceback (most recent call last):")[1:]:
        for line in block.splitlines()[1:]:
            if not line.strip() or line[:1].isspace():
                continue
            m = _RAISED.match(line.strip())
            if m:
                found.append((m["type"], m["message"] or ""))
            break
    return found


def _errors(text: str) -> list[ErrorLine]:
    errors: dict[tuple[str, str], ErrorLine] = {}
    raised = [(m["type"], m["message"] or "") for m in _ERROR.finditer(text)]
    for kind, message in [*_raised_after_tracebacks(text), *raised]:
        message = message.strip()[:300]
        name = kind.rsplit(".", 1)[-1]
        if not any(e.type == name and e.message == message for e in errors.values()):
            errors[(name, message)] = ErrorLine(name, message, _literal(message))
    return list(errors.values())


def _summary(prose: str) -> str:
    """The title and the first paragraphs of prose, without tracebacks, up to a few hundred
    characters: the question a hybrid search can rank."""
    kept: list[str] = []
    for line in prose.splitlines():
        stripped = line.strip().lstrip("#>*- ").strip()
        if not stripped or _PY_FRAME.search(line) or _JS_FRAME.match(line):
            continue
        if stripped.startswith("Traceback (most recent call last)"):
            continue
        kept.append(stripped)
        if sum(len(k) + 1 for k in kept) >= MAX_SUMMARY_CHARS:
            break
    return " ".join(kept)[:MAX_SUMMARY_CHARS].strip()


def extract_clues(text: str) -> IssueClues:
    """Everything ``text`` names, de-duplicated and weighted (see the module docstring)."""
    prose, blocks = _strip_fences(text)
    frames = _frames(text)
    errors = _errors(text)
    return IssueClues(
        summary=_summary(prose),
        frames=frames,
        mentions=_mentions(text, frames),
        identifiers=_identifiers(prose, blocks, frames, errors),
        errors=errors,
        code_blocks=blocks,
    )
