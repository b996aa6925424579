"""The SWE-bench Lite localisation score: an instance is a hit at k when every gold file
(function) is in the top k, as SweRank's Table 1 and LocAgent count it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "swebench"))

from swebench_data import patch_files
from swebench_scoring import hit_at, score_instance, summarise

RANKED = ["a.py", "b.py", "a.py", "c.py", "d.py", "e.py", "f.py"]


def test_a_hit_needs_every_gold_file_within_k() -> None:
    assert hit_at(RANKED, ["a.py"], 1)
    assert not hit_at(RANKED, ["b.py"], 1)
    assert not hit_at(RANKED, ["a.py", "e.py"], 4)
    # a file named twice takes one place: e.py is fifth, not sixth
    assert hit_at(RANKED, ["a.py", "e.py"], 5)
    assert not hit_at(RANKED, [], 5)


def test_an_instance_scores_files_and_functions() -> None:
    scores = score_instance(RANKED, ["b.py:B.run"], ["c.py"], ["b.py:B.run", "c.py:go"])
    assert scores == {
        "file@1": False,
        "file@5": True,
        "file@10": True,
        "function@5": False,
        "function@10": False,
    }
    assert score_instance([], [], ["c.py"], [])["function@5"] is None


def test_the_summary_is_percent_of_instances() -> None:
    results = [
        score_instance(["a.py"], ["a.py:f"], ["a.py"], ["a.py:f"]),
        score_instance(["b.py", "a.py"], [], ["a.py"], []),
        score_instance(["b.py"], ["b.py:g"], ["a.py"], ["a.py:f"]),
        score_instance([], [], ["a.py"], ["a.py:f"]),
    ]
    summary = summarise(results)
    assert summary["instances"] == 4
    assert summary["file@1"] == 25.0
    assert summary["file@5"] == 50.0
    assert summary["function@5"] == 33.3  # the instance without a gold function is not counted
    assert summary["function_instances"] == 3


def test_the_files_of_a_patch() -> None:
    patch = "diff --git a/x/y.py b/x/y.py\n--- a/x/y.py\n+++ b/x/y.py\ndiff --git a/z.py b/z.py\n"
    assert patch_files(patch) == ["x/y.py", "z.py"]


def test_instances_are_chosen_by_split_or_by_repository_name() -> None:
    from run import select_instances

    instances = [
        {"instance_id": "psf__requests-1", "repo": "psf/requests"},
        {"instance_id": "sympy__sympy-1", "repo": "sympy/sympy"},
    ]
    assert select_instances(instances, "report", [""]) == instances[:1]
    assert select_instances(instances, "tune", []) == instances[1:]
    assert select_instances(instances, "report", ["sympy"]) == instances[1:]
    assert select_instances(instances, "all", ["requests", "sympy/sympy"]) == instances


def test_a_sample_takes_each_repositorys_first_instances_by_id_number() -> None:
    from run import first_per_repository

    instances = [
        {"instance_id": "astropy__astropy-14182", "repo": "astropy/astropy"},
        {"instance_id": "sympy__sympy-12236", "repo": "sympy/sympy"},
        {"instance_id": "astropy__astropy-6938", "repo": "astropy/astropy"},
        {"instance_id": "sympy__sympy-11400", "repo": "sympy/sympy"},
        {"instance_id": "sympy__sympy-11870", "repo": "sympy/sympy"},
    ]
    sample = first_per_repository(instances, 2)
    assert [i["instance_id"] for i in sample] == [
        "astropy__astropy-6938",  # 6938 before 14182: by number, not as text
        "astropy__astropy-14182",
        "sympy__sympy-11400",
        "sympy__sympy-11870",
    ]
