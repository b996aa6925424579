"""Per-generation corpus statistics for BM25 and for choosing a vector scan strategy.

``TermPostings`` holds each lexeme's posting list (and so its document frequency) in one
repository generation;
``ChunkFacetStat`` holds the chunk count and total length per (language, test, doc) facet,
which gives BM25's N and average length, and an estimate of how many rows a filtered vector
search has to look at. Both are rebuilt by ``indexing.services.search_stats.refresh_search_stats``
inside the transaction that swaps a generation in; rows of generations no branch has live are dropped then.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from indexing.models import Repository


class TermPostings(models.Model):
    """One lexeme's posting list in one repository generation (every branch's live one has its
    own), for one kind of chunk (``part``), ordered by BM25 impact.

    ``postings`` packs an 8-byte header and one 8-byte record per chunk holding the lexeme
    (``indexing.postings_format``: chunk id less the header's, token count, twice the
    field-weighted term frequency, test/doc flags), best single-term impact first, so a search
    reads only the head of each list (``substring`` of an uncompressed, ``EXTERNAL`` value
    fetches only the TOAST chunks it needs). ``part`` is the chunks' test/doc flags (``& 3``)
    and their block of 2^32 ids (``>> 2``). ``df`` is the list's length: summed over the parts,
    the document frequency BM25 needs.
    """

    pk = models.CompositePrimaryKey("repository", "generation", "term", "part")
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    generation = models.PositiveIntegerField()
    term = models.CharField(max_length=128)
    part = models.PositiveIntegerField(
        default=0, help_text="Test/doc flags (& 3) and block of 2^32 chunk ids (>> 2)."
    )
    df = models.PositiveIntegerField(help_text="Chunks of the part containing the term.")
    postings = models.BinaryField(help_text="Packed records, best impact first.")

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class TermBucket(models.Model):
    """The short lists of one repository generation (at most ``RARE_DF`` chunks: most lexemes
    of a code base are in one or two chunks), packed many to a row by a hash of the lexeme, so
    that they do not pay a row and an index entry each. Element ``i`` of the arrays is one list,
    as a ``TermPostings`` row would hold it (``indexing.postings_format``)."""

    pk = models.CompositePrimaryKey("repository", "generation", "bucket")
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    generation = models.PositiveIntegerField()
    bucket = models.PositiveIntegerField(
        help_text="Hash of the lexemes (postings_format.BUCKET_SQL)."
    )
    terms = ArrayField(models.CharField(max_length=128))
    parts = ArrayField(models.PositiveIntegerField())
    dfs = ArrayField(models.PositiveIntegerField())
    postings = ArrayField(models.BinaryField())

    def __str__(self) -> str:
        return f"bucket {self.bucket}: {len(self.terms)} lists"


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
