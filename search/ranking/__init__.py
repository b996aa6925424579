"""Ordering candidates: Reciprocal Rank Fusion and the blend, ranking signals, and LLM re-ranking."""
