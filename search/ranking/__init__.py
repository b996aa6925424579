"""Ordering candidates: fusion (RRF, left-out placement, the blend), ordering (signals and the
learned model), and the model re-rankers (cross-encoder, chat model)."""
