"""The results fragment draws what the API answered, no more: exact and regex hits mark the
character ranges the search matched (not the query's words), carry no score rows, and totals
that are lower bounds read as such (issue 29, items 2 and 3)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from tests.frontend.signed_in import ui_client

pytestmark = pytest.mark.django_db

SOURCE = "pool_maxsize = 10\nmax_retries = 3\nretries = max(1, max_retries)\n"


def exact_hit(**extra: Any) -> dict[str, Any]:
    """One file of an exact answer, shaped as ``search.response._exact_hit`` writes it."""
    hit: dict[str, Any] = {
        "repo_id": str(uuid.uuid4()),
        "repo_name": "acme/demo",
        "file_path": "src/config.py",
        "chunk_index": 0,
        "content": SOURCE,
        "language": "python",
        "start_line": 1,
        "end_line": 3,
        "symbol": "",
        "kind": "file",
        "commit": "a" * 40,
        "bm25_score": None,
        "vector_score": None,
        "combined_score": 0.0,
        "rerank_score": None,
        "semantic": False,
        "match_count": 2,
        "matches": [
            {"line": 2, "text": "max_retries = 3", "ranges": [[0, 11]]},
            {"line": 3, "text": "retries = max(1, max_retries)", "ranges": [[17, 28]]},
        ],
        "snippets": [{"start_line": 1, "end_line": 3, "content": SOURCE.rstrip("\n")}],
    }
    hit.update(extra)
    return hit


def exact_response(query: str, results: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "query": query,
        "mode": "exact",
        "results": results,
        "total": len(results),
        "total_is_lower_bound": False,
        "match_total": sum(r.get("match_count", 0) for r in results),
        "truncated": False,
        "next_cursor": None,
        "timed_out": False,
        "total_bm25_hits": 0,
        "total_vector_hits": 0,
        "trace": [{"name": "exact", "status": "ran", "reason": "", "ms": 3.0, "detail": {}}],
    }
    response.update(extra)
    return response


def render(query: str, response: dict[str, Any]) -> str:
    body = {"request": {"query": query}, "response": response}
    answer = ui_client().post("/ui/results", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200
    return answer.content.decode()


def marked(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", m) for m in re.findall(r"<mark>(.*?)</mark>", html, re.S)]


def test_exact_hits_mark_the_matched_ranges_not_the_query_words() -> None:
    html = render('"max_retries"', exact_response('"max_retries"', [exact_hit()]))
    assert marked(html) == ["max_retries", "max_retries"]
    rows = re.findall(r"<tr( class=\"hit\")?><td class=\"ln\">(\d+)</td>(.*?)</tr>", html, re.S)
    first = next(row for row in rows if row[1] == "1")
    assert "<mark>" not in first[2] and not first[0]  # pool_maxsize: no "max" lit up


def test_a_regex_range_across_tokens_is_marked_whole() -> None:
    hit = exact_hit(
        matches=[{"line": 3, "text": "retries = max(1, max_retries)", "ranges": [[10, 16]]}],
        match_count=1,
    )
    html = render("/max\\(1,/", exact_response("/max\\(1,/", [hit], mode="regex"))
    assert "".join(marked(html)) == "max(1,"
    assert "retries" not in "".join(marked(html))


def test_exact_hits_show_no_score_rows_and_no_retrieval_counts() -> None:
    html = render('"max_retries"', exact_response('"max_retries"', [exact_hit()]))
    assert 'class="scores"' not in html and "combined" not in html
    assert "0.0000" not in html
    assert "full-text hits" not in html and "vector hits" not in html


def test_hybrid_hits_keep_their_scores() -> None:
    hit = exact_hit(bm25_score=0.5, vector_score=0.25, combined_score=0.03)
    for key in ("match_count", "matches", "snippets"):
        del hit[key]
    response = exact_response("max retries", [hit], mode="hybrid", total_bm25_hits=4)
    del response["match_total"]
    html = render("max retries", response)
    assert 'class="scores"' in html and "0.0300" in html and "full-text hits: 4" in html


def test_a_lower_bound_marks_both_the_files_and_the_lines() -> None:
    response = exact_response('"max_retries"', [exact_hit()], total=46, match_total=111)
    response["total_is_lower_bound"] = response["match_total_is_lower_bound"] = True
    html = render('"max_retries"', response)
    assert "46+ files, 111+ matching lines" in html
    response["total_is_lower_bound"] = response["match_total_is_lower_bound"] = False
    assert "46 files, 111 matching lines" in render('"max_retries"', response)


def test_a_file_whose_matches_go_on_offers_show_more_matches() -> None:
    lines = [f"retries_{n} = {n}" for n in range(1, 101)]
    hit = exact_hit(
        content="\n".join(lines),
        match_count=340,
        matches_offset=0,
        matches_truncated=True,
        matches=[{"line": n, "text": lines[n - 1], "ranges": [[0, 7]]} for n in range(1, 101)],
        snippets=[{"start_line": 1, "end_line": 100, "content": "\n".join(lines)}],
    )
    html = render('"retries"', exact_response('"retries"', [hit]))
    button = re.search(r"<button[^>]*class=\"more-matches\"[^>]*>", html)
    assert button, html
    # the card shows 14 lines (matches 1..14): the next request starts at the 15th match
    assert 'data-offset="14"' in button.group(0) and 'data-after-line="14"' in button.group(0)
    assert f'data-path="{hit["file_path"]}"' in button.group(0)
    assert "326 more matching lines in this file" in html
    assert "more lines in this chunk" not in html
    # A file shown whole gets no button.
    assert "more-matches" not in render('"max_retries"', exact_response('"x"', [exact_hit()]))


def hybrid_hit(path: str, start: int, symbol: str, repo_id: str) -> dict[str, Any]:
    return {
        "repo_id": repo_id,
        "repo_name": "acme/demo",
        "file_path": path,
        "chunk_index": start,
        "content": f"def {symbol}():\n    return {start}\n",
        "language": "python",
        "start_line": start,
        "end_line": start + 1,
        "symbol": symbol,
        "kind": "function",
        "commit": "a" * 40,
        "bm25_score": 1.0,
        "vector_score": 0.5,
        "combined_score": 0.03,
        "rerank_score": None,
        "semantic": False,
    }


def test_hybrid_results_are_one_card_per_file_with_its_best_chunks() -> None:
    """The API groups (``group_by: "file"``, tests/search/test_group_by_file.py); a card shows
    the file's best chunk, the next ones below it, then "more from this file"."""
    repo = str(uuid.uuid4())
    below = [hybrid_hit("src/a.py", n, name, repo) for n, name in ((10, "second"), (20, "third"))]
    best = {
        **hybrid_hit("src/a.py", 1, "first", repo),
        "chunks": [*below, hybrid_hit("src/a.py", 30, "fourth", repo)],
    }
    hits = [best, hybrid_hit("src/b.py", 1, "other", repo)]
    response = exact_response("retry", hits, mode="hybrid", total=2, group_by="file")
    del response["match_total"]
    html = render("retry", response)
    cards = re.findall(r"<article class=\"result\".*?</article>", html, flags=re.S)
    assert len(cards) == 2
    assert "src/a.py:1-2" in cards[0] and "src/b.py:1-2" in cards[1]
    # the file's next best chunks below its best one, then "more from this file"
    assert "src/a.py:10-11" in cards[0] and "src/a.py:20-21" in cards[0]
    assert "fourth" not in cards[0] and "src/a.py:30" not in cards[0]
    link = re.search(r'<a href="([^"]+)">More from this file</a>', cards[0])
    assert link and "file%3Asrc%2Fa.py" in link.group(1) and "repo%3Aacme%2Fdemo" in link.group(1)
    assert "1 more result in it" in cards[0]
    assert "More from this file" not in cards[1]
    positions = re.findall(r'data-position="(\d+)"', html)
    assert positions == ["1", "2"]


def test_hybrid_list_totals_that_are_lower_bounds_get_a_plus() -> None:
    hit = hybrid_hit("src/a.py", 1, "first", str(uuid.uuid4()))
    response = exact_response("retry", [hit], mode="hybrid", total=1)
    del response["match_total"]
    response.update(
        total_bm25_hits=50,
        total_bm25_hits_is_lower_bound=True,
        total_vector_hits=12,
        total_vector_hits_is_lower_bound=False,
    )
    html = render("retry", response)
    assert "full-text hits: 50+" in html and "vector hits: 12 " in html.replace("<", " <")
