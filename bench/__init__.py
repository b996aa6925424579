"""Benchmarks and the evaluation lab: scripts run from a checkout, never shipped with the product
(pyproject.toml's package list and .dockerignore leave this folder out; the import contract
``no-lab-in-product`` keeps the product from importing it)."""
