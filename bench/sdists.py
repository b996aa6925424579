"""Source distributions the benchmarks index, pinned by version and sha256, in one place.

    from sdists import unpacked_sdist
    source = unpacked_sdist("django")          # bench/corpora/sdists/django-5.2.8/<top folder>

The sdist is downloaded once from the package index's simple pages (PEP 503; ``PIP_INDEX_URL``
or PyPI), its sha256 checked against ``PINNED``, and unpacked under ``bench/corpora/sdists/``
(not committed). pip is not used: ``pip download`` prepares each sdist's metadata, which needs
the build system of projects such as scipy or numpy (meson and a compiler).
``DISTINCT`` are the packages of the 1 M-chunk corpus of distinct real code
(``build_distinct_corpus.py``). (``bench/eval/fetch_corpus.py`` builds the evaluation corpus
with its own pin.)
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

CACHE = Path(__file__).resolve().parent / "corpora" / "sdists"
INDEX_URL = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
PINNED: dict[str, tuple[str, str]] = {
    "django": ("5.2.8", "23254866a5bb9a2cfa6004e8b809ec6246eba4b58a7589bc2772f1bcc8456c7f"),
    "click": ("8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    "flask": ("3.0.3", "ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842"),
    # The distinct-code corpus: large projects, mostly Python, with C, C++, Cython and TypeScript.
    "ansible": ("12.3.0", "02721f6fb432ddd47f1044ac49b04b5e9ae08890bd427def8df3db1607aeec51"),
    "ansible-core": ("2.19.14", "1e7612788eaa6b3c87a3670ce86c64b830eba0ae2b3fcb25a772f276704163b4"),
    "astropy": ("8.0.2", "e6af35823099ad6a40b57dbe5ff845f577374ea131925c9fa4b49eeab06c5310"),
    "bokeh": ("3.10.2", "d9fba1004fae149c6e6d54ba37410e52b8d4622ed5c6dad2220afa1b61362de0"),
    "cython": ("3.3.1", "e0e45989e821bef6aa9ae15c7d583ab5e055f7406c4b3624e49e06d24e90375a"),
    "dask": ("2026.11.0", "75448e361e733aff98a57e2075a2a2398329c60eb6c567a3aa35de91970f1c7e"),
    "docutils": ("0.23.1", "8a83ac8810e41228b6f20e96a183abd2460a1757f78e2603e3d4b31fe7d29622"),
    "duckdb": ("2.0.1", "5b3f493140e35b75298ee0fc606d98e3065e8601e64fe81b09326de7a6fd68e0"),
    "ipython": ("9.19.1", "8d717edbe293adcb1b9fdeaad7ccfb1573f62d91bc10f0ae62604dbf31e6acac"),
    "matplotlib": ("3.11.2", "cec596316640f2b394b8f0daa0ea61a8eae82d017b620b9f202befb972a59ea4"),
    "mypy": ("2.4.1", "63b590965691e540a335fa74dadf31a7069142f6b72e234689bbd244edf55623"),
    "networkx": ("3.6.1", "26b7c357accc0c8cde558ad486283728b65b6a95d85ee1cd66bafab4c8168509"),
    "nltk": ("3.10.4", "44679f4e9220abfd496d2c8cdb22f8425ccbe557604f9aa5cacb1c44003dabc1"),
    "numba": ("0.68.1", "9de461812470173a14eeb7e0bbd27c897dffe835402a33861166842fc5f6ea57"),
    "numpy": ("2.5.5", "5cddc243c75114ba845f01b1f87aca1572dbf7b6c2d88636ed3e1d2bccd7f1bf"),
    "pandas": ("3.1.1", "05fed3e3b7c99b226f160e29d7d6cb7ef39638c758cbfe42b3f24ba34f04b859"),
    "pip": ("26.3", "6c36ae7da8695be67e3cd9f7d87919667ced53f57ce2ede75d89b5912ed2bc4c"),
    "pylint": ("4.1.5", "e6f1b42eefe7ac926ea0eb50f9528466610e6d77144a3e32357b992aa1adc6d5"),
    "salt": ("3008.5", "0259deafd601d783721e5aa8ed10677d8c4d6cc12f5de17499af71590d593315"),
    "scikit-image": ("0.26.0", "f5f970ab04efad85c24714321fcc91613fcb64ef2a892a13167df2f3e59199fa"),
    "scikit-learn": ("1.9.1", "629cada3e33e2b9bf376cdc7614a47a4140b8aedc1d836579e359736fbd82977"),
    "scipy": ("1.18.1", "52c4b7422442aba924d03ad4019852b08a92e64ea187b933135687bfe2747307"),
    "setuptools": ("84.2.1", "3ff8b3b5492a0aa66960f4419365a86b84e013070d4313e4d4a6894f5d64d6bc"),
    "sphinx": ("9.2.0", "90470459f3cab15d9dfed146c71cf77694b0445df17b2e0e69059cb9f7fc9ee4"),
    "sqlalchemy": ("2.1.9", "d700a8b2edfb26282a470333d6bc4a454c4acda4d201a3bea7b72fa76c217d28"),
    "statsmodels": ("0.15.0", "5d257fe58d0772bc46a557880ca78e2a8e07fec7bfd9d11074aef8e33e1aecbc"),
    "sympy": ("1.14.0", "d3d3fe8df1e5a0b42f0e7bdf50541697dbe7d23746e894990c030e2b05e72517"),
    "tornado": ("6.6.1", "28e6311402af59c8b02e3fa0f5e7d8eb465b25081381803b127d97e6a4395d5a"),
    "transformers": ("5.25.0", "9120226c6bf170d69abc3029036799bb5d48e552f7127646a529a5c9309812e2"),
    "twisted": ("26.10.0", "5f0355403e507fc23ceea85e9dbb4bc59335aabde41dd324e8b8cea180dd38de"),
    "xarray": ("2026.9.0", "6abc69694c22fa1f0fb2f357ff4e41d88beb4477ed71091f944b7dbf67ed54fe"),
}  # fmt: skip
DISTINCT = tuple(name for name in PINNED if name not in {"click", "flask"})


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(requirement: str) -> tuple[str, str, str]:
    """(package, version, sha256) for ``name`` or ``name==version``; refuses an unpinned one."""
    name, _, version = requirement.partition("==")
    name = _canonical(name.strip())
    if name not in PINNED or (version and version != PINNED[name][0]):
        known = ", ".join(f"{n}=={v}" for n, (v, _h) in sorted(PINNED.items()))
        raise SystemExit(f"{requirement!r} is not pinned in bench/sdists.py (pinned: {known})")
    return name, PINNED[name][0], PINNED[name][1]


def download_sdist(requirement: str, dest: Path) -> Path:
    """The pinned sdist's archive in ``dest``, found on the index's simple page, sha256 checked."""
    name, version, sha256 = pinned(requirement)
    with urllib.request.urlopen(f"{INDEX_URL}/{name}/", timeout=120) as response:
        page = response.read().decode()
    links = re.findall(r'href="([^"#]+)[^"]*"[^>]*>([^<]+\.tar\.gz)</a>', page)
    wanted = [
        (url, filename)
        for url, filename in links
        if _canonical(filename[: -len(f"-{version}.tar.gz")]) == name
        and filename.endswith(f"-{version}.tar.gz")
    ]
    if not wanted:
        raise SystemExit(f"{INDEX_URL}/{name}/ lists no sdist of {name} {version}")
    url, filename = wanted[0]
    archive = dest / filename
    with urllib.request.urlopen(
        urllib.parse.urljoin(f"{INDEX_URL}/{name}/", url), timeout=600
    ) as response:
        archive.write_bytes(response.read())
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"sha256 mismatch for {archive.name}: {digest} != pinned {sha256}")
    return archive


def unpacked_sdist(requirement: str) -> Path:
    """The pinned sdist unpacked (downloaded on first use); returns its top-level folder."""
    name, version, _sha = pinned(requirement)
    unpacked = CACHE / f"{name}-{version}"
    if not unpacked.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="reposearch-sdist-", dir=CACHE) as tmp:
            archive = download_sdist(requirement, Path(tmp))
            with tarfile.open(archive) as tar:
                tar.extractall(Path(tmp) / "x", filter="data")
            (Path(tmp) / "x").rename(unpacked)
    (top,) = [p for p in unpacked.iterdir() if p.is_dir()]
    return top
