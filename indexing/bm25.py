"""BM25's parameters: one object, read by the statistics build and by every full-text path.

``score = sum_t idf(t) * tf(t) * (k1 + 1) / (tf(t) + k1 * (1 - b + b * len / avglen))``, where
``tf`` weighs each position by its field of the chunk's ``tsvector``: the symbol (A), the path
(B) and the body (D; C is unused and weighs as the body). The term postings are built with these
values (each list in impact order, ``tf2`` twice the field-weighted frequency:
``indexing.postings_format``), so they are a property of the index, not a per-search knob:
trying other values means building the statistics again with them. That is why they live in
indexing, which builds the statistics, and search reads them from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BM25Parameters:
    k1: float = 1.2
    b: float = 0.75
    symbol_weight: float = 3.0  # A
    path_weight: float = 1.5  # B
    body_weight: float = 1.0  # C and D

    @property
    def field_weights(self) -> dict[str, float]:
        return {
            "A": self.symbol_weight,
            "B": self.path_weight,
            "C": self.body_weight,
            "D": self.body_weight,
        }

    def rank_weights(self) -> tuple[list[float], float]:
        """``ts_rank_cd``'s weights (in ``[0, 1]``, ordered D, C, B, A) and the scale that turns
        its normalisation-0 rank back into the field-weighted term frequency."""
        weights = self.field_weights
        top = max(weights.values())
        return [weights[w] / top for w in "DCBA"], top


BM25 = BM25Parameters()
