"""Listing every repository of a GitHub organisation, GitLab group or Gitea organisation
through their REST APIs, for ``manage.py import_repos`` (``indexing.services.bulk_import``).

``client`` speaks HTTP to one API base URL (token, pagination, rate limits); ``providers``
knows each host's endpoint, authentication header and JSON shape.
"""
