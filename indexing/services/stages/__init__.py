"""The stages of an index run, one function per Celery task: fetch and index
(``fetch_and_index``), embed (``embed``), and what every stage shares (``run_context``)."""
