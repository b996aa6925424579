"""Write ``bench/swebench/instances.json``: SWE-bench Lite's instances with their repository,
base commit, split and gold files and functions -- ids and commits only, never issue texts or
patches (``run.py`` reads those from the same data files at run time).

    .venv/bin/python bench/swebench/prepare.py --mirror-dir /work/.mirror
    .venv/bin/python bench/swebench/prepare.py --locagent loc_outputs.jsonl --agentless c.csv

``--mirror-dir`` holds the bare git mirrors ``gersteinlab+LocAgent/repo`` and
``OpenAutoCoder+Agentless/repo`` (read at HEAD); ``--locagent`` / ``--agentless`` name the
files (or mirrors) themselves. Django's instances are left out (its history is too large to
fetch here). Gold files are checked against Agentless's gold patches; a difference is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from swebench_data import (  # noqa: E402
    agentless_rows,
    gold_locations,
    locagent_rows,
    patch_files,
    split_of,
)

INSTANCES = HERE / "instances.json"


def build_instances(locagent: Path, agentless: Path | None) -> list[dict[str, Any]]:
    patches = agentless_rows(agentless) if agentless is not None else {}
    instances: list[dict[str, Any]] = []
    for row in locagent_rows(locagent):
        meta = row["meta_data"]
        split = split_of(meta["repo"])
        if split == "skipped":
            continue
        files, functions = gold_locations(row)
        agentless_row = patches.get(row["instance_id"])
        if agentless_row is not None and set(patch_files(agentless_row["patch"])) != set(files):
            print(f"{row['instance_id']}: LocAgent's gold files {files} differ from the patch's")
        instances.append(
            {
                "instance_id": row["instance_id"],
                "repo": meta["repo"],
                "base_commit": meta["base_commit"],
                "split": split,
                "gold_files": files,
                "gold_functions": functions,
            }
        )
    return sorted(instances, key=lambda i: (i["repo"], i["instance_id"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mirror-dir", type=Path, help="folder of the bare git mirrors")
    parser.add_argument("--locagent", type=Path, help="loc_outputs.jsonl (or its mirror)")
    parser.add_argument("--agentless", type=Path, help="the classifications CSV (or its mirror)")
    parser.add_argument("--out", type=Path, default=INSTANCES)
    args = parser.parse_args(argv)
    locagent = args.locagent or args.mirror_dir
    if locagent is None:
        parser.error("give --mirror-dir or --locagent")
    agentless = args.agentless or args.mirror_dir
    instances = build_instances(locagent, agentless)
    lines = ",\n".join(json.dumps(i) for i in instances)  # one instance a line
    args.out.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    counts = Counter((i["split"], i["repo"]) for i in instances)
    for (split, repo), count in sorted(counts.items()):
        print(f"{split:7} {repo:28} {count:3}")
    print(f"{len(instances)} instances written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
