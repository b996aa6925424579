"""Reading JSON and yes/no verdicts out of chat-model answers."""

from __future__ import annotations

import pytest

from llm.chat_parsing import ChatParseError, parse_json, parse_string_list, parse_yes_no


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"queries": ["a", "b"]}', {"queries": ["a", "b"]}),
        ('```json\n{"queries": ["a", "b"]}\n```', {"queries": ["a", "b"]}),
        ('```\n["x", "y"]\n```', ["x", "y"]),
        (
            'Sure! Here is the JSON:\n{"relevant": true, "confidence": 0.9}\nHope it helps.',
            {"relevant": True, "confidence": 0.9},
        ),
        ('{"a": [1, 2, 3,], "b": {"c": 1,},}', {"a": [1, 2, 3], "b": {"c": 1}}),
        ("{'answer': 'yes', 'note': \"it's fine\"}", {"answer": "yes", "note": "it's fine"}),
        ("{'relevant': True, 'confidence': None}", {"relevant": True, "confidence": None}),
        ('prose {not json} then {"ok": "a } inside"} end', {"ok": "a } inside"}),
    ],
)
def test_parse_json_recovers_common_shapes(answer: str, expected: object) -> None:
    assert parse_json(answer) == expected


def test_parse_json_expect_and_failures() -> None:
    assert parse_json('Options: ["a"] or {"k": 1}', expect=dict) == {"k": 1}
    for bad in ["", "   ", "no json here at all", "{broken: [", None]:
        with pytest.raises(ChatParseError):
            parse_json(bad)  # type: ignore[arg-type]


def test_parse_string_list() -> None:
    assert parse_string_list('```json\n{"queries": ["pool size", "db config"]}\n```') == [
        "pool size",
        "db config",
    ]
    assert parse_string_list('["one", "two", "three"]', limit=2) == ["one", "two"]
    assert parse_string_list(
        "Here are alternatives:\n1. connection pool\n2) pool settings\n- db pool"
    ) == [
        "connection pool",
        "pool settings",
        "db pool",
    ]


@pytest.mark.parametrize(
    ("answer", "relevant", "confidence", "source"),
    [
        ('{"relevant": true, "confidence": 0.83}', True, 0.83, "json"),
        ('```json\n{"answer": "no", "confidence": "90%"}\n```', False, 0.9, "json"),
        ("{'verdict': 'yes', 'score': 70}", True, 0.7, "json"),
        ('{"relevant": "yes", "confidence": "high"}', True, 0.9, "json"),
        ('{"relevant": false}', False, 0.5, "json"),
        ("Yes, this snippet configures the pool. Confidence: 0.8", True, 0.8, "keyword"),
        ("No. It is unrelated.", False, 0.5, "keyword"),
        ("This code is not relevant to the query.", False, 0.5, "keyword"),
        ("Relevant: the function builds the pool (confidence 75%)", True, 0.75, "keyword"),
    ],
)
def test_parse_yes_no(answer: str, relevant: bool, confidence: float, source: str) -> None:
    verdict = parse_yes_no(answer)
    assert verdict is not None
    assert (verdict.relevant, verdict.parsed_from) == (relevant, source)
    assert verdict.confidence == pytest.approx(confidence)
    assert 0.0 <= verdict.score <= 1.0


def test_parse_yes_no_without_an_answer() -> None:
    assert parse_yes_no("I cannot tell from this snippet.") is None
    assert parse_yes_no("") is None
    assert parse_yes_no('{"confidence": 0.4}') is None
