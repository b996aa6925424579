"""Ask: retrieval-augmented answers with deterministic citations, call-graph expansion and HyDE."""
