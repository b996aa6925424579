"""Evaluate search on labelled questions: an ablation over one query set, or a split of corpora.

    .venv/bin/python bench/eval/run.py --split report --configs hybrid+scope --json report.json
    .venv/bin/python bench/eval/run.py --split tune --baseline before.json
    .venv/bin/python bench/eval/run.py --repo NAME --queries bench/eval/flask-queries.json --k 5

Options, reports and errors: ``bench/eval/harness/command.py`` (``--help``). Uses the database of
the environment (``DATABASE_URL``, as ``manage.py`` does); the corpora must be indexed already
(``bench/eval/index_corpus.py``). The evaluation harness is benchmark code, not shipped with the
product: run this from a checkout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from bench.eval.harness.command import EvalCommand

    arguments = sys.argv[1:] if argv is None else argv
    EvalCommand().run_from_argv([sys.argv[0], "eval", *arguments])  # exits 1 on a CommandError
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
