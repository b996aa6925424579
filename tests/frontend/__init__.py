"""Tests of the web UI: rendering helpers, pages, the file view and a real browser."""
