"""Tests inside files (opt-in): Rust's inline test modules marked, JS/TS describe/it blocks chunks."""

from __future__ import annotations

import pytest

from indexing.chunking import chunk_file, inline_tests


@pytest.fixture(autouse=True)
def _test_detection_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inline_tests, "MARK_INLINE_TESTS", True)
    monkeypatch.setattr(inline_tests, "TEST_BLOCKS", True)


RUST = """\
pub fn parse(input: &str) -> usize {
    input.len()
}

#[cfg(not(test))]
pub fn only_outside_tests() {}

#[test]
fn lone_test() {
    assert_eq!(parse("ab"), 2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parses_empty() {
        assert_eq!(parse(""), 0);
    }

    fn helper() -> usize {
        1
    }
}

pub fn after() {}
"""


def test_rust_items_under_cfg_test_and_test_attributes_are_marked() -> None:
    pieces = chunk_file(RUST, "rust", "src/lib.rs")
    marked = {(p.symbol, p.is_test) for p in pieces}
    assert ("parse", False) in marked
    assert ("only_outside_tests", False) in marked
    assert ("after", False) in marked
    assert ("lone_test", True) in marked
    assert ("parses_empty", True) in marked
    assert ("helper", True) in marked  # a helper of the test module is test code too
    # The module's own lines (`#[cfg(test)] mod tests { use super::*;`) are test code as well.
    module_lines = [p for p in pieces if p.symbol is None and "mod tests" in p.content]
    assert module_lines and all(p.is_test for p in module_lines)


TYPESCRIPT = """\
import { describe, it, expect } from 'vitest';
import { map } from '../operators';

describe('map', () => {
  const double = (x: number) => x * 2;

  it('maps every value', () => {
    expect([1, 2].map(double)).toEqual([2, 4]);
  });

  it.each([1, 2])('keeps %s in order', (n) => {
    expect(n).toBeGreaterThan(0);
  });
});

test(`ends when the source ends`, async function () {
  expect(map).toBeDefined();
});
"""


def test_describe_and_it_blocks_of_a_test_file_are_chunks_named_by_their_description() -> None:
    pieces = chunk_file(TYPESCRIPT, "typescript", "src/__tests__/map.test.ts")
    by_symbol = {p.symbol: p for p in pieces}
    assert by_symbol["map.maps every value"].kind == "method"
    assert by_symbol["map.maps every value"].content.lstrip().startswith("it('maps every value'")
    assert by_symbol["map.keeps %s in order"].start_line == 11
    assert by_symbol["map.double"].kind == "method"
    assert by_symbol["ends when the source ends"].kind == "function"
    assert by_symbol["map"].kind == "class"
    # Every non-blank line is still in exactly one chunk.
    covered = sorted(line for p in pieces for line in range(p.start_line, p.end_line + 1))
    non_blank = [n for n, line in enumerate(TYPESCRIPT.split("\n"), start=1) if line.strip()]
    assert [n for n in covered if n in non_blank] == non_blank


def test_off_by_default_nothing_is_marked_and_test_files_keep_their_old_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inline_tests, "MARK_INLINE_TESTS", False)
    monkeypatch.setattr(inline_tests, "TEST_BLOCKS", False)
    assert not any(p.is_test for p in chunk_file(RUST, "rust", "src/lib.rs"))
    pieces = chunk_file(TYPESCRIPT, "typescript", "src/__tests__/map.test.ts")
    assert not any(p.symbol and "maps every value" in p.symbol for p in pieces)


def test_the_same_calls_in_a_source_file_are_not_test_blocks() -> None:
    pieces = chunk_file(TYPESCRIPT, "typescript", "src/map.ts")
    assert not any(p.symbol and "maps every value" in p.symbol for p in pieces)
    assert not any(p.is_test for p in pieces)


@pytest.mark.django_db
def test_a_test_chunk_of_a_source_file_is_stored_as_a_test() -> None:
    from indexing.models import Chunk
    from indexing.services.storing import FileToStore, StoredChunk, store_files
    from tests import factories

    repository = factories.indexed_repository("c/inline-tests", ["fn parse() {}"])
    pieces = [
        StoredChunk(p.index, p.start_line, p.end_line, p.symbol or "", p.kind, p.content,
                    is_test=p.is_test)
        for p in chunk_file(RUST, "rust", "src/lib.rs")
    ]  # fmt: skip
    store_files(
        repository.pk, 2, [FileToStore("src/lib.rs", "f" * 40, 1, "rust", False, False, 30, pieces)]
    )
    stored = dict(
        Chunk.objects.filter(repository=repository, generation=2).values_list("symbol", "is_test")
    )
    assert stored["parses_empty"] is True and stored["parse"] is False
