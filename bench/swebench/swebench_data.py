"""SWE-bench Lite's instances as the localisation benchmark reads them (no Django needed).

The instances, their base commits, issue texts and gold locations come from LocAgent's
``evaluation/loc_output/locagent/claude_3-5/loc_outputs.jsonl`` (300 rows, ``meta_data`` with
``repo``, ``base_commit``, ``problem_statement``, ``patch`` and ``gt_file_changes``); Agentless's
``classification/swebench_lite_classifications.csv`` (the same 300 issues with their gold
patches) is read to check the gold files against the patches. Either is a file path or a bare
git mirror's folder holding it (``/work/.mirror/<owner>+<name>/repo``: read at its HEAD).
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from pathlib import Path
from typing import Any

LOCAGENT_MIRROR = "gersteinlab+LocAgent"
LOCAGENT_PATH = "evaluation/loc_output/locagent/claude_3-5/loc_outputs.jsonl"
AGENTLESS_MIRROR = "OpenAutoCoder+Agentless"
AGENTLESS_PATH = "classification/swebench_lite_classifications.csv"

# SWE-bench Lite's repositories by split (issue 31): report on these, tune on the others.
REPORT_REPOS = (
    "pytest-dev/pytest",
    "sphinx-doc/sphinx",
    "psf/requests",
    "pylint-dev/pylint",
    "pydata/xarray",
    "mwaskom/seaborn",
    "pallets/flask",
)
TUNE_REPOS = (
    "astropy/astropy",
    "matplotlib/matplotlib",
    "scikit-learn/scikit-learn",
    "sympy/sympy",
)
SKIPPED_REPOS = ("django/django",)  # its history is too large to fetch here

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def split_of(repo: str) -> str:
    if repo in REPORT_REPOS:
        return "report"
    if repo in TUNE_REPOS:
        return "tune"
    return "skipped"


def read_text(source: Path, mirror_name: str, path: str) -> str:
    """``path`` of the mirror ``source/<mirror_name>/repo`` (or of the bare repository
    ``source``), or ``source`` itself when it is a file."""
    if source.is_file():
        return source.read_text(encoding="utf-8")
    for git_dir in (source / mirror_name / "repo", source / "repo", source):
        if (git_dir / "HEAD").exists() or (git_dir / ".git").exists():
            result = subprocess.run(
                ["git", "-C", str(git_dir), "show", f"HEAD:{path}"],
                check=True,
                capture_output=True,
            )
            return result.stdout.decode("utf-8")
    raise SystemExit(f"swebench: no {mirror_name} mirror (or file) at {source}")


def locagent_rows(source: Path) -> list[dict[str, Any]]:
    text = read_text(source, LOCAGENT_MIRROR, LOCAGENT_PATH)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def agentless_rows(source: Path) -> dict[str, dict[str, str]]:
    text = read_text(source, AGENTLESS_MIRROR, AGENTLESS_PATH)
    return {row["instance_id"]: row for row in csv.DictReader(io.StringIO(text))}


def patch_files(patch: str) -> list[str]:
    """The files a unified diff changes, in order."""
    return list(dict.fromkeys(_DIFF_FILE.findall(patch)))


def gold_locations(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """LocAgent's gold files and edited functions (``path:Class.method``) of one row."""
    files: list[str] = []
    functions: list[str] = []
    for change in row["meta_data"]["gt_file_changes"]:
        files.append(change["file"])
        functions.extend(change.get("changes", {}).get("edited_entities", []))
    return list(dict.fromkeys(files)), list(dict.fromkeys(functions))


def issue_texts(source: Path) -> dict[str, str]:
    """Each instance's problem statement, by instance id."""
    return {
        row["instance_id"]: row["meta_data"]["problem_statement"] for row in locagent_rows(source)
    }
