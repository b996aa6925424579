"""Reading the model's citations: forms, renumbering, invented numbers and typed locations."""

from __future__ import annotations

from search.ask.citations import parse_citations


def test_every_citation_form_is_read_and_renumbered_in_citation_order() -> None:
    parsed = parse_citations("Pool in [3]. Size [1, 3] and [2][3]; retry [4-5].", 5)
    assert parsed.cited == [3, 1, 2, 4, 5]
    assert parsed.invalid == []
    assert parsed.text == "Pool in [1]. Size [2][1] and [3][1]; retry [4][5]."


def test_numbers_that_were_not_given_are_removed_and_reported() -> None:
    parsed = parse_citations("It is set in [2] and [9]. Also [0, 1].", 3)
    assert parsed.cited == [2, 1]
    assert parsed.invalid == [9, 0]
    assert "[9]" not in parsed.text and "[0" not in parsed.text
    assert parsed.text == "It is set in [1] and. Also [2]."


def test_markdown_links_point_at_the_cited_snippet_not_the_marker_number() -> None:
    parsed = parse_citations("A [2] then B [1].", 2, link_for=lambda n: f"https://x/{n}")
    assert parsed.markdown == "A [[1]](https://x/2) then B [[2]](https://x/1)."


def test_locations_the_model_typed_itself_never_reach_the_reader() -> None:
    parsed = parse_citations("See src/pool.py:12-20 [1] and lines 4\u20139 of util.go#L3.", 1)
    assert "12" not in parsed.text and "4" not in parsed.text and "#L3" not in parsed.text
    assert "src/pool.py" in parsed.text
    assert parsed.removed_locations == ["src/pool.py:12-20", "util.go#L3", "lines 4\u20139"]


def test_a_markdown_link_the_model_wrote_is_not_a_citation() -> None:
    parsed = parse_citations("See [1](http://evil) and [1].", 1)
    assert parsed.cited == [1]
    assert parsed.text == "See [1](http://evil) and [1]."


def test_an_answer_without_citations_cites_nothing() -> None:
    parsed = parse_citations("The snippets do not say.", 4)
    assert parsed.cited == [] and parsed.invalid == []


def test_a_citation_followed_by_a_parenthesis_after_a_space_is_still_a_citation() -> None:
    parsed = parse_citations("Reads the size [2, 1] (see the settings).", 2)
    assert parsed.cited == [2, 1]
