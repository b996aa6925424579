"""What ``search.localize.extract`` reads out of realistic issues: a Python traceback, backticked
names, paths and dotted modules, JavaScript and Go stack traces, error messages."""

from __future__ import annotations

from search.localize.extract import extract_clues, normalise_path

ASTROPY_ISSUE = """Card.fromstring fails on cards with a CONTINUE record

When I read a header with `astropy.io.fits.Header.fromstring` on a long string value, the
`_split` of the card gives wrong values. See astropy/io/fits/card.py:560 and the helper in
django.db.models.query; parse_value_string may be involved too.

```python
from astropy.io import fits
h = fits.Header.fromstring(data)
```

```
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.11/site-packages/astropy/io/fits/header.py", line 351, in fromstring
    cards.append(Card.fromstring(image))
  File "/home/me/venv/lib/python3.11/site-packages/astropy/io/fits/card.py", line 560, in _split
    raise VerifyError(f"Unparsable card ({self.keyword}), fix it first with .verify('fix').")
astropy.io.fits.verify.VerifyError: Unparsable card (FOO), fix it first with .verify('fix').
```
"""


def test_a_python_traceback_gives_frames_innermost_first_with_repository_paths() -> None:
    clues = extract_clues(ASTROPY_ISSUE)
    frames = [(f.path, f.line, f.function) for f in clues.frames]
    assert frames == [
        ("astropy/io/fits/card.py", 560, "_split"),
        ("astropy/io/fits/header.py", 351, "fromstring"),
    ]
    assert clues.frames[0].weight > clues.frames[1].weight


def test_backticked_and_framed_names_rank_above_names_from_code_and_builtins_are_left_out() -> None:
    clues = extract_clues(ASTROPY_ISSUE)
    names = [i.name for i in clues.identifiers]
    assert names[:2] == ["fromstring", "_split"]
    top = clues.identifiers[0]
    assert top.qualified == "astropy.io.fits.Header.fromstring"
    assert {"backticks", "frame"} <= set(top.sources)
    assert "parse_value_string" in names and "Header" in names and "VerifyError" in names
    # Builtins and words every codebase has point at nothing.
    assert not {"print", "append", "data", "self", "ValueError"} & set(names)


def test_paths_and_dotted_modules_become_candidate_paths_frames_are_not_repeated() -> None:
    clues = extract_clues(ASTROPY_ISSUE)
    mentions = {m.text: m.candidates for m in clues.mentions}
    # card.py is already a stack frame: it is not counted twice as a mention.
    assert "astropy/io/fits/card.py" not in mentions
    assert mentions["django.db.models.query"][:2] == (
        "django/db/models/query.py",
        "django/db/models/query/__init__.py",
    )
    plain = extract_clues("The bug is in src/pool/config.py:42, see `make_pool`.")
    (mention,) = plain.mentions
    assert (mention.text, mention.line) == ("src/pool/config.py", 42)


def test_the_error_message_yields_its_constant_text_for_an_exact_search() -> None:
    (error,) = extract_clues(ASTROPY_ISSUE).errors
    assert error.type == "VerifyError"
    assert error.message.startswith("Unparsable card (FOO)")
    # The run's values ("FOO", 'fix') are cut: what the source code holds is left.
    assert error.literal == "fix it first with .verify"
    assert extract_clues("KeyError: 'x'").errors[0].literal == ""  # nothing constant to find


def test_the_summary_is_the_prose_without_code_or_traceback() -> None:
    clues = extract_clues(ASTROPY_ISSUE)
    assert clues.summary.startswith("Card.fromstring fails on cards with a CONTINUE record")
    assert "Traceback" not in clues.summary and "fits.Header.fromstring(data)" not in clues.summary
    assert len(clues.code_blocks) == 2


def test_javascript_and_go_stack_traces() -> None:
    js = extract_clues(
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at renderList (/app/src/components/List.jsx:27:18)\n"
        "    at Object.render (webpack:///./src/App.js:10:3)\n"
    )
    assert [(f.path, f.line, f.function) for f in js.frames] == [
        ("app/src/components/List.jsx", 27, "renderList"),
        ("src/App.js", 10, "Object.render"),
    ]
    go = extract_clues(
        "panic: runtime error: invalid memory address or nil pointer dereference\n\n"
        "goroutine 1 [running]:\n"
        "github.com/acme/shop/pool.(*Pool).Get(0x0)\n"
        "\t/home/ci/go/src/github.com/acme/shop/pool/pool.go:88 +0x1d\n"
    )
    assert [(f.path, f.line, f.function) for f in go.frames] == [
        ("home/ci/go/src/github.com/acme/shop/pool/pool.go", 88, "Get")
    ]


def test_normalise_path_cuts_installation_prefixes() -> None:
    assert normalise_path("C:\\py\\Lib\\site-packages\\requests\\models.py") == "requests/models.py"
    assert normalise_path("./src/app.py") == "src/app.py"
    assert normalise_path("/abs/checkout/pkg/mod.py") == "abs/checkout/pkg/mod.py"


def test_the_line_that_ends_a_traceback_is_its_error_whatever_it_is_called() -> None:
    clues = extract_clues(
        "Traceback (most recent call last):\n"
        '  File "shop/pool.py", line 8, in acquire\n'
        '    raise PoolExhausted("no free connection left in the pool")\n'
        "shop.pool.PoolExhausted: no free connection left in the pool\n"
    )
    (error,) = clues.errors
    assert (error.type, error.literal) == ("PoolExhausted", "no free connection left in the pool")
    assert "PoolExhausted" in [i.name for i in clues.identifiers]


def test_names_written_after_a_dot_and_the_class_of_a_special_method_are_read() -> None:
    clues = extract_clues(
        "Currently the Request class has a .register_hook() method, but the code in "
        "Request.__init__() wraps a list of hooks in a list."
    )
    names = [i.name for i in clues.identifiers]
    assert "register_hook" in names and "Request" in names
    assert "__init__" not in names


def test_names_that_open_with_an_acronym_are_read_and_plural_acronyms_are_not() -> None:
    clues = extract_clues(
        "The Mathematica printer gets derivatives wrong; add these lines to MCodePrinter. "
        "The HTTPAdapter retries, and NDDataRef keeps its units, for URLs and APIs alike."
    )
    names = [i.name for i in clues.identifiers]
    assert {"MCodePrinter", "HTTPAdapter", "NDDataRef"} <= set(names)
    assert not {"URLs", "APIs", "Mathematica"} & set(names)
