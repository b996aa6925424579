"""The evaluation harness (``manage.py eval``): labelled queries, metrics, ablations, splits over
corpora, paired bootstrap intervals and report comparison."""
