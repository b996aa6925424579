"""Edge cases of chunk_file: oversized definitions, line endings, broken code, windows."""

from __future__ import annotations

import itertools
import textwrap

from indexing.chunking import ChunkBudget, ChunkPiece, chunk_file


def outline(pieces: list[ChunkPiece]) -> list[tuple[int, int, str, str | None]]:
    return [(p.start_line, p.end_line, p.kind, p.symbol) for p in pieces]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_oversized_function_is_split_at_statement_boundaries_keeping_its_symbol() -> None:
    statements = "".join(
        f"    if value > {i}:\n        value = step_{i}(value)\n        log(value)\n"
        for i in range(100)
    )
    text = f"def pipeline(value):\n{statements}    return value\n\n\ndef tail():\n    pass\n"
    budget = ChunkBudget(max_lines=40, max_chars=100_000)
    pieces = chunk_file(text, "python", "p.py", budget=budget)
    parts = [p for p in pieces if p.symbol == "pipeline"]
    assert len(parts) == 8  # 302 lines in pieces of at most 40
    assert all(p.kind == "function" for p in parts)
    assert all(p.end_line - p.start_line + 1 <= 40 for p in parts)
    assert parts[0].start_line == 1 and parts[-1].end_line == 302
    lines = text.split("\n")
    for before, after in itertools.pairwise(parts):
        assert after.start_line == before.end_line + 1
        # every cut falls before a whole `if` statement, never inside one
        assert lines[after.start_line - 1].startswith("    if value >")
    assert outline(pieces)[-1] == (305, 306, "function", "tail")
    # each part only reports the calls made in its own lines
    assert "step_0" in parts[0].calls and "step_0" not in parts[1].calls


def test_character_budget_also_splits() -> None:
    body = "".join(f"    x{i} = '{'a' * 90}'\n" for i in range(30))
    text = f"def wide():\n{body}"
    pieces = chunk_file(text, "python", "w.py", budget=ChunkBudget(max_chars=1000))
    assert len(pieces) > 1
    assert all(len(p.content) <= 1000 for p in pieces)
    assert {p.symbol for p in pieces} == {"wide"}


def test_nested_functions_stay_inside_their_parent() -> None:
    text = src(
        """
        def outer():
            def inner():
                return helper()

            class Local:
                pass

            return inner()
        """
    )
    assert outline(chunk_file(text, "python", "n.py")) == [(1, 8, "function", "outer")]


def test_crlf_line_numbers_and_verbatim_content() -> None:
    text = "import os\r\n\r\ndef first():\r\n    return 1\r\n\r\n\r\ndef second():\r\n    pass\r\n"
    pieces = chunk_file(text, "python", "crlf.py")
    assert outline(pieces) == [
        (1, 1, "module", None),
        (3, 4, "function", "first"),
        (7, 8, "function", "second"),
    ]
    assert pieces[1].content == "def first():\r\n    return 1\r"


def test_file_without_trailing_newline() -> None:
    text = "func a() {}\n\nfunc b() int {\n\treturn 1\n}"
    pieces = chunk_file("package m\n\n" + text, "go", "m.go")
    assert outline(pieces)[-1] == (5, 7, "function", "b")
    assert pieces[-1].content == "func b() int {\n\treturn 1\n}"


def test_a_single_huge_line_is_one_chunk_and_does_not_break_anything() -> None:
    minified = "var a=[" + ",".join(str(i) for i in range(20_000)) + "];function f(){return g()}"
    pieces = chunk_file(minified + "\n", "javascript", "bundle.js")
    assert [(p.start_line, p.end_line, p.content) for p in pieces] == [(1, 1, minified)]
    windows = chunk_file(minified, None, "bundle.unknown")
    assert outline(windows) == [(1, 1, "window", None)]


def test_syntax_errors_still_give_the_valid_definitions() -> None:
    text = src(
        """
        def fine():
            return 1

        def broken(:
            x =

        class Ok:
            def method(self):
                return self
        """
    )
    pieces = chunk_file(text, "python", "e.py")
    kinds = {(p.kind, p.symbol) for p in pieces}
    assert ("function", "fine") in kinds
    assert ("method", "Ok.method") in kinds
    assert any(p.start_line <= 4 <= p.end_line for p in pieces)  # the broken lines too


def test_unknown_language_gets_100_line_windows_with_20_lines_overlap() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 251))
    pieces = chunk_file(text, None, "notes.unknown")
    assert outline(pieces) == [
        (1, 100, "window", None),
        (81, 180, "window", None),
        (161, 250, "window", None),
    ]
    assert all(p.calls == () for p in pieces)
    assert chunk_file(text, "markdown", "README.md")[1].start_line == 81


def test_comment_separated_by_a_blank_line_is_not_a_doc_comment() -> None:
    text = src(
        """
        // Package-level note.

        // Add adds.
        func Add(a, b int) int { return a + b }
        """
    )
    pieces = chunk_file("package m\n" + text, "go", "m.go")
    assert outline(pieces) == [(1, 2, "module", None), (4, 5, "function", "Add")]


def test_rust_attributes_and_doc_comments_stay_with_their_item() -> None:
    text = src(
        """
        /// A config.
        #[derive(Debug, Clone)]
        #[serde(rename_all = "camelCase")]
        pub struct Config {
            pub name: String,
        }

        impl Default for Config {
            /// Defaults.
            #[inline]
            fn default() -> Self {
                Config { name: String::new() }
            }
        }
        """
    )
    assert outline(chunk_file(text, "rust", "c.rs")) == [
        (1, 6, "class", "Config"),
        (8, 8, "class", "Config"),
        (9, 14, "method", "Config.default"),
    ]


def test_go_methods_use_the_receiver_type_including_generic_receivers() -> None:
    text = src(
        """
        package list

        func (l List[T]) Len() int { return len(l.items) }

        func (l *List[T]) Push(v T) {
        \tl.items = append(l.items, v)
        }
        """
    )
    pieces = chunk_file(text, "go", "list.go")
    assert [(p.symbol, p.kind) for p in pieces[1:]] == [
        ("List.Len", "method"),
        ("List.Push", "method"),
    ]
    assert pieces[2].calls == ("append",)


def test_typescript_decorators_arrow_fields_and_interfaces() -> None:
    text = src(
        """
        export interface Repo {
          find(id: string): Item;
        }

        @Injectable()
        export class ItemService {
          @Inject() private repo!: Repo;

          /** Find one. */
          @Cached()
          async find(id: string): Promise<Item> {
            return this.repo.find(id);
          }

          onChange = (e: Event) => this.emit("change", e);
        }
        """
    )
    assert outline(chunk_file(text, "typescript", "s.ts")) == [
        (1, 3, "class", "Repo"),
        (5, 7, "class", "ItemService"),  # decorator, class line and field
        (9, 13, "method", "ItemService.find"),  # doc comment and decorator included
        (15, 16, "method", "ItemService.onChange"),  # the class's closing brace joins it
    ]


def test_header_files_are_parsed_as_cpp() -> None:
    text = src(
        """
        #pragma once

        namespace net {
        class Socket {
         public:
          int Send(const char* data) { return ::send(fd_, data); }
         private:
          int fd_;
        };
        }  // namespace net
        """
    )
    assert outline(chunk_file(text, "c", "include/socket.h")) == [
        (1, 3, "module", None),
        (4, 5, "class", "Socket"),
        (6, 6, "method", "Socket.Send"),
        (7, 10, "class", "Socket"),
    ]


def test_calls_are_bare_names_deduplicated_and_sorted() -> None:
    text = src(
        """
        def handler(request):
            data = json.loads(request.body)
            validate(data)
            validate(data)
            return self.client.post(url, data=build(data))
        """
    )
    (piece,) = chunk_file(text, "python", "h.py")
    assert piece.calls == ("build", "loads", "post", "validate")
