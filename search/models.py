"""Per-generation corpus statistics for BM25 and for choosing a vector scan strategy.

``TermStat`` holds each lexeme's document frequency in one repository generation;
``ChunkFacetStat`` holds the chunk count and total length per (language, test, doc) facet,
which gives BM25's N and average length, and an estimate of how many rows a filtered vector
search has to look at. Both are rebuilt by ``search.retrieval.corpus_stats.refresh_search_stats`` right after a
generation is swapped in; rows of other generations are dropped then.
"""

from __future__ import annotations

from django.db import models

from indexing.models import Repository


class TermStat(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    generation = models.PositiveIntegerField()
    term = models.CharField(max_length=128)
    df = models.PositiveIntegerField(help_text="Chunks of the generation containing the term.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "generation", "term"], name="unique_term_per_generation"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class ChunkFacetStat(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    generation = models.PositiveIntegerField()
    language = models.CharField(max_length=32, blank=True)
    is_test = models.BooleanField()
    is_doc = models.BooleanField()
    chunks = models.PositiveIntegerField()
    total_length = models.BigIntegerField(help_text="Sum of the chunks' token counts.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "generation", "language", "is_test", "is_doc"],
                name="unique_facet_per_generation",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.language} test={self.is_test} doc={self.is_doc}: {self.chunks}"
