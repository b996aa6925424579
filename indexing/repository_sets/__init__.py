"""Declarative repository sets: ``REPO_SEARCH_REPOS_FILE`` / ``manage.py sync_repos``.

``loading`` reads the YAML or JSON file keeping each value's line; ``planning`` checks every
entry (URL policy, branch, groups, duplicates) and compares it with the database;
``reconcile`` applies a plan in one transaction under a lock, with an audit row per change.
"""
