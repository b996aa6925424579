"""The REST API of the indexing app: repositories and jobs."""
