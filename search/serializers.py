"""Request and response shapes of ``POST /api/search``.

Types are strict, as a JSON API's should be: ``"limit": "10"``, ``"use_bm25": "yes"`` or
``"repo_ids": "abc"`` are 400s, not guesses. Unknown fields are 400s too (a misspelt
``include_test`` must not silently do nothing).
"""

from __future__ import annotations

import functools
from typing import Any

from rest_framework import serializers

from reposearch.api_serializers import (
    NonBlankTextField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictSerializer,
    repositories_field,
)

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100


class SearchRequestSerializer(StrictSerializer):
    query = NonBlankTextField(
        help_text=f"What to look for (1..{MAX_QUERY_CHARS} characters), in the query language "
        '(docs/query-language.md): words, "exact text", /regex/, OR / NOT / - / ( ) over those, '
        "filters repo: lang: file: case: branch: sym: type: content: (and GitHub's language: "
        "path: symbol:). A filter-like word it cannot apply is a 400 with a suggestion.",
    )
    limit = StrictIntegerField(min_value=1, max_value=MAX_LIMIT, default=10)
    use_bm25 = StrictBooleanField(
        default=True, help_text="Full-text (BM25) retrieval (this or use_vector, or both)."
    )
    use_vector = StrictBooleanField(
        default=True, help_text="Embedding retrieval (this or use_bm25, or both)."
    )
    use_rerank = StrictBooleanField(default=False, help_text="LLM re-ranking of the top 30.")
    use_expansion = StrictBooleanField(default=False, help_text="LLM query expansion.")
    use_cross_encoder = StrictBooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Reorder the best 10 with the cross-encoder (no chat model needed); null: "
        "the server's REPO_SEARCH_CROSS_ENCODER (on unless turned off).",
    )
    repo_ids = repositories_field(
        "Only these repositories, by id or name (unknown ones are a 404; a name "
        "several repositories share is a 400 listing their ids)."
    )
    repos = repositories_field("The same as repo_ids (names read better); both together: either's.")
    languages = serializers.ListField(
        child=StrictCharField(max_length=32), required=False, allow_null=True, max_length=20
    )
    branches = serializers.ListField(
        child=StrictCharField(max_length=255),
        required=False,
        allow_null=True,
        max_length=20,
        help_text='Branch names or globs ("release/*"); ["*"]: every indexed branch. Left out: '
        "each repository's default branch. A name no repository has indexed is a 404.",
    )
    paths = serializers.ListField(
        child=StrictCharField(max_length=300),
        required=False,
        allow_null=True,
        max_length=20,
        help_text='fnmatch-style path globs, e.g. "src/**/*.py", "*.go", "docs/".',
    )
    include_tests = StrictBooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="null: automatic (included when the query is about tests).",
    )
    include_docs = StrictBooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="null: automatic (included when the query is about docs).",
    )

    group_by = StrictChoiceField(
        choices=["file", "chunk"],
        default="chunk",
        help_text="Hybrid: chunk (one result per ranked chunk, the default) or file (one result "
        "per file at the rank of its best chunk, its other chunks of the answer in `chunks`; "
        "limit and total count files, as on a code host; what the search page shows). Exact "
        "and regex results are one per file either way; sym: one per definition.",
    )
    mode = StrictChoiceField(
        choices=["auto", "semantic", "exact", "regex"],
        default="auto",
        help_text="auto: the query language decides (plain text is hybrid search).",
    )
    cursor = StrictCharField(
        required=False,
        allow_null=True,
        max_length=4000,
        help_text="An exact/regex answer's next_cursor, with the same query.",
    )
    context_lines = StrictIntegerField(min_value=0, max_value=10, default=2)
    file_path = StrictCharField(
        required=False,
        allow_null=True,
        max_length=300,
        help_text="Exact/regex: only the file at this path (with repo_ids: one file), e.g. to "
        "page its matching lines with match_offset.",
    )
    match_offset = StrictIntegerField(
        min_value=0,
        max_value=1_000_000,
        default=0,
        help_text="Exact/regex: skip this many matching lines of each file (a hit lists up to "
        "100; matches_truncated says more follow).",
    )

    def validate_query(self, value: str) -> str:
        return value.strip()


class LineMatchSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField(trim_whitespace=False)
    ranges = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="[start, end) character offsets in text.",
    )


class SnippetSerializer(serializers.Serializer):
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    content = serializers.CharField(trim_whitespace=False)


class ChunkFieldsSerializer(serializers.Serializer):
    """The fields of one ranked chunk: a hit's own, and each of a grouped file's other chunks."""

    chunk_index = serializers.IntegerField()
    content = serializers.CharField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    symbol = serializers.CharField()
    kind = serializers.CharField()
    bm25_score = serializers.FloatField(allow_null=True)
    vector_score = serializers.FloatField(allow_null=True)
    combined_score = serializers.FloatField()
    rerank_score = serializers.FloatField(allow_null=True)
    semantic = serializers.BooleanField(
        required=False, help_text="Found by the vector lists alone (similar, not the words)."
    )
    url = serializers.CharField(required=False, help_text="The file view at these lines.")
    upstream_url = serializers.CharField(required=False, allow_null=True)
    names = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Identifiers on this hit: the name its chunk defines (hybrid, sym:), then the "
        "identifiers the search matched (exact, regex). Pass one as name= to "
        "/api/symbols/definitions (go to definition) or /api/symbols/references.",
    )


class FileChunkSerializer(ChunkFieldsSerializer):
    """Another chunk of a grouped hybrid result's file (its file's fields are the result's)."""


class SearchHitSerializer(ChunkFieldsSerializer):
    repo_id = serializers.UUIDField()
    repo_name = serializers.CharField()
    file_path = serializers.CharField()
    language = serializers.CharField()
    commit = serializers.CharField(help_text="The indexed commit this hit comes from.")
    branch = serializers.CharField(help_text="The branch that commit was the tip of.")
    branches = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Every branch searched that holds this chunk (stored once for all of them).",
    )
    indexed_at = serializers.DateTimeField(
        allow_null=True, help_text="When that commit's index went live."
    )
    is_test = serializers.BooleanField()
    is_doc = serializers.BooleanField()
    match_count = serializers.IntegerField(
        required=False, help_text="Exact/regex: the file's matching lines, all of them."
    )
    matches_offset = serializers.IntegerField(
        required=False, help_text="Exact/regex: matching lines of the file before matches[0]."
    )
    matches_truncated = serializers.BooleanField(
        required=False,
        help_text="Exact/regex: more matching lines follow those in matches (request them "
        "with match_offset and file_path).",
    )
    symbol_match = serializers.ChoiceField(
        choices=["exact", "prefix", "substring", "fuzzy"], required=False, help_text="sym: hits."
    )
    matches = LineMatchSerializer(many=True, required=False)
    file_match = serializers.ChoiceField(
        choices=["name", "name_without_extension", "words_in_name", "words_in_path"],
        required=False,
        help_text="type:file hits: how the file's name matched the words.",
    )
    path_ranges = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        required=False,
        help_text="type:file hits: [start, end) of the words in file_path.",
    )
    snippets = SnippetSerializer(many=True, required=False)
    chunks = FileChunkSerializer(
        many=True,
        required=False,
        help_text='Hybrid with group_by "file": the file\'s other chunks in this answer, best '
        "first (this result's own fields are its best chunk's).",
    )


class StageTraceSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["ran", "skipped", "failed"])
    reason = serializers.CharField()
    ms = serializers.FloatField()
    detail = serializers.DictField()


class ScopeSerializer(serializers.Serializer):
    repo_ids = serializers.ListField(child=serializers.UUIDField(), allow_null=True)
    languages = serializers.ListField(child=serializers.CharField(), allow_null=True)
    path_globs = serializers.ListField(child=serializers.CharField(), allow_null=True)
    include_tests = serializers.BooleanField()
    include_docs = serializers.BooleanField()
    tests_reason = serializers.CharField()
    docs_reason = serializers.CharField()


class ServedBySerializer(serializers.Serializer):
    database = serializers.CharField(
        help_text="primary, or the read replica (replica1, replica2...) the search read from."
    )
    lag_bytes = serializers.IntegerField(
        help_text="Bytes of the primary's write-ahead log the database had not replayed when "
        "the search began (0: the primary). Every generation swap of the repositories searched "
        "had been replayed; vectors written since may not have been."
    )
    skipped = serializers.DictField(
        child=serializers.CharField(), help_text="Replicas passed over, and why."
    )


class RepositoryFacetSerializer(serializers.Serializer):
    repo_id = serializers.UUIDField()
    name = serializers.CharField()
    files = serializers.IntegerField()


class LanguageFacetSerializer(serializers.Serializer):
    language = serializers.CharField()
    files = serializers.IntegerField()


class FacetsSerializer(serializers.Serializer):
    basis = serializers.ChoiceField(
        choices=["matching_files", "ranked_candidates"],
        help_text="matching_files (exact, regex): every file that matches; ranked_candidates "
        "(hybrid): the files of the ranked answer the search kept (up to 200 chunks), not every "
        "file holding a word.",
    )
    is_lower_bound = serializers.BooleanField(help_text="Counting stopped early (exact, regex).")
    repositories = RepositoryFacetSerializer(many=True, help_text="Most files first.")
    languages = LanguageFacetSerializer(many=True, help_text="Most files first.")


class NoticeSerializer(serializers.Serializer):
    filter = serializers.CharField(
        help_text="The filter as written (file:GLOB, path:GLOB, -lang:NAME...; file: for a name "
        "with no value; type:file for a word of a file-name search); empty when the filters "
        "together are why."
    )
    message = serializers.CharField(help_text="What it matched, and what would match.")
    suggestion = serializers.CharField(
        required=False,
        help_text="What to write instead, when it would match: a filter (file:PATH), or a file "
        "name for a type:file word.",
    )
    suggested_query = serializers.CharField(
        required=False, help_text="The query with that filter in its place."
    )


class SearchResponseSerializer(serializers.Serializer):
    query = serializers.CharField()
    queries = serializers.ListField(
        child=serializers.CharField(), help_text="The query, then the expansions used."
    )
    mode = serializers.ChoiceField(choices=["hybrid", "exact", "regex", "symbol", "file"])
    group_by = serializers.ChoiceField(
        choices=["file", "chunk"], required=False, help_text="Hybrid: how results are grouped."
    )
    results = SearchHitSerializer(many=True)
    total = serializers.IntegerField(
        help_text="Results in all pages: files for exact/regex and grouped hybrid answers."
    )
    total_is_lower_bound = serializers.BooleanField()
    match_total = serializers.IntegerField(required=False, help_text="Exact/regex: lines.")
    match_total_is_lower_bound = serializers.BooleanField(
        required=False, help_text="Exact/regex: counting stopped early; match_total is a minimum."
    )
    facets = FacetsSerializer(
        required=False,
        help_text="Result files per repository and language (hybrid, and the first page of "
        "exact/regex), for filters: add repo:NAME or lang:LANGUAGE to the query.",
    )
    only_weak_matches = serializers.BooleanField(
        required=False,
        help_text="Hybrid: no result holds the query's words or is close in meaning; the "
        "results only faintly resemble it (none of them is a real hit).",
    )
    truncated = serializers.BooleanField(help_text="More results than this page.")
    next_cursor = serializers.CharField(allow_null=True)
    timed_out = serializers.BooleanField()
    exact_matches = serializers.IntegerField(
        allow_null=True, help_text="Lines holding the query exactly (identifier queries)."
    )
    exact_matches_is_lower_bound = serializers.BooleanField()
    total_bm25_hits = serializers.IntegerField()
    total_bm25_hits_is_lower_bound = serializers.BooleanField(
        required=False, help_text="Hybrid: a full-text list was cut at its depth (more match)."
    )
    total_vector_hits = serializers.IntegerField()
    total_vector_hits_is_lower_bound = serializers.BooleanField(
        required=False, help_text="Hybrid: a vector list was cut at its depth (more are near)."
    )
    scope = ScopeSerializer()
    trace = StageTraceSerializer(many=True)
    ms = serializers.FloatField()
    served_by = ServedBySerializer(
        required=False, help_text="The database the search read from, and its lag."
    )
    notices = NoticeSerializer(
        many=True,
        help_text="On a first page: each exclusion (-file:, -lang:) that excludes no indexed file "
        "in the repositories searched; when the page is empty, each file: or lang: filter that "
        "matches none (or the filters together), with what would match; each filter name "
        "written with nothing after its colon (file: src/), searched as a word; and, when a "
        "type:file search finds nothing, each word no indexed path holds, with the nearest name.",
    )


@functools.cache
def _bound_response_serializer() -> SearchResponseSerializer:
    serializer = SearchResponseSerializer()
    serializer.fields  # noqa: B018  # bind the (nested) fields now, once
    return serializer


def serialize_response(body: dict[str, Any]) -> dict[str, Any]:
    """``SearchResponseSerializer(body).data`` as a plain dict, from one serializer bound once
    per process. A new serializer deep-copies its ~100 declared fields (nested hits, matches,
    snippets, trace, scope) before it writes anything: 6-8 ms of CPU per search. Writing a
    document reads the fields and changes nothing on them, so threads can share the instance."""
    return _bound_response_serializer().to_representation(body)  # type: ignore[no-any-return]
