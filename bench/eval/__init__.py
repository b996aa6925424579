"""Retrieval-quality evaluation: the harness (``harness/``), the corpora and their labelled
questions, and the scripts that fetch, index, evaluate and tune (``run.py``, ``levers.py``, ...)."""
