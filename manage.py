#!/usr/bin/env python
"""Django's command-line utility for reposearch (also installed as the ``reposearch`` command)."""

from __future__ import annotations

import sys


def main() -> None:
    from reposearch.cli import main as run

    run(sys.argv)


if __name__ == "__main__":
    main()
