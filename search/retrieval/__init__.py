"""Getting candidates for a search: query parsing and expansion, scope, corpus statistics, and the
full-text and vector retrievals with their database helpers."""
