"""The evaluation harness (``bench/eval/run.py``): labelled queries, metrics, ablations, splits over
corpora, paired bootstrap intervals and report comparison."""
