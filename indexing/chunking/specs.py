"""Per-grammar tables: which tree-sitter nodes are functions, classes, namespaces, calls.

The chunker in ``treesitter.py`` is generic; everything it knows about a language is
here.  Node type names come from each grammar's ``node-types.json``; a name a grammar
does not have is harmless (it just never matches).

Symbol convention, the same in every language: a definition is qualified by its
enclosing classes (including Rust ``impl``/``trait`` blocks and Ruby modules), joined
with ``.`` — ``Class.method``, ``Outer.Inner.method``, ``Type.method`` for a Go method
with receiver ``*Type`` and for ``impl Trait for Type`` in Rust, ``Class.method`` for a
C++ ``void Class::method()`` defined out of line.  Namespaces and packages (C++
``namespace``, C# ``namespace``, Rust ``mod``, TypeScript ``namespace``) are not part of
the symbol: they are how files are organised, not what people call things.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

_COMMON_COMMENTS = ("comment", "line_comment", "block_comment", "doc_comment")


@dataclass(frozen=True)
class LanguageSpec:
    functions: frozenset[str]
    classes: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    # Nodes that wrap exactly one definition and belong to its range (decorators,
    # `export`, C++ `template <...>`).
    wrappers: frozenset[str] = frozenset()
    # Nodes inside a class body whose children are members too (Java enum bodies).
    member_groups: frozenset[str] = frozenset()
    # `const f = () => {}` declarations (JS/TS) and class fields holding a function.
    variable_declarations: frozenset[str] = frozenset()
    function_values: frozenset[str] = frozenset()
    field_functions: frozenset[str] = frozenset()
    # tree-sitter query patterns capturing the callee of a call as `@capture`
    calls: tuple[str, ...] = ()
    comments: tuple[str, ...] = _COMMON_COMMENTS
    # Nodes kept with the definition that follows them (Rust `#[derive]`, TS decorators).
    attributes: tuple[str, ...] = ("decorator", "attribute_item", "attribute_list")


_JS_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition"}
)
_JS_CALLS = (
    "(call_expression function: (_) @capture)",
    "(new_expression constructor: (_) @capture)",
)
_JS = LanguageSpec(
    functions=_JS_FUNCTIONS,
    classes=frozenset({"class_declaration"}),
    wrappers=frozenset({"export_statement"}),
    variable_declarations=frozenset({"lexical_declaration", "variable_declaration"}),
    function_values=frozenset(
        {"arrow_function", "function_expression", "function", "generator_function"}
    ),
    field_functions=frozenset({"field_definition", "public_field_definition"}),
    calls=_JS_CALLS,
)
_TS = LanguageSpec(
    functions=_JS_FUNCTIONS,
    classes=frozenset(
        {
            "class_declaration",
            "abstract_class_declaration",
            "interface_declaration",
            "enum_declaration",
        }
    ),
    namespaces=frozenset({"internal_module", "module"}),
    wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
    variable_declarations=_JS.variable_declarations,
    function_values=_JS.function_values,
    field_functions=_JS.field_functions,
    calls=_JS_CALLS,
)
_C_CLASSES = frozenset({"struct_specifier", "union_specifier", "enum_specifier", "type_definition"})

SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        functions=frozenset({"function_definition"}),
        classes=frozenset({"class_definition"}),
        wrappers=frozenset({"decorated_definition"}),
        calls=("(call function: (_) @capture)",),
    ),
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": LanguageSpec(
        functions=frozenset({"function_declaration", "method_declaration"}),
        classes=frozenset({"type_declaration"}),
        calls=("(call_expression function: (_) @capture)",),
    ),
    "rust": LanguageSpec(
        functions=frozenset({"function_item", "macro_definition"}),
        classes=frozenset({"struct_item", "enum_item", "union_item", "trait_item", "impl_item"}),
        namespaces=frozenset({"mod_item", "foreign_mod_item"}),
        calls=("(call_expression function: (_) @capture)",),
    ),
    "java": LanguageSpec(
        functions=frozenset(
            {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
        ),
        classes=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
            }
        ),
        member_groups=frozenset({"enum_body_declarations"}),
        calls=(
            "(method_invocation name: (_) @capture)",
            "(object_creation_expression type: (_) @capture)",
        ),
    ),
    "c": LanguageSpec(
        functions=frozenset({"function_definition"}),
        classes=_C_CLASSES,
        namespaces=frozenset({"linkage_specification"}),
        calls=("(call_expression function: (_) @capture)",),
    ),
    "cpp": LanguageSpec(
        functions=frozenset({"function_definition"}),
        classes=_C_CLASSES | {"class_specifier"},
        namespaces=frozenset({"namespace_definition", "linkage_specification"}),
        wrappers=frozenset({"template_declaration"}),
        calls=("(call_expression function: (_) @capture)", "(new_expression type: (_) @capture)"),
    ),
    "csharp": LanguageSpec(
        functions=frozenset(
            {
                "method_declaration",
                "constructor_declaration",
                "destructor_declaration",
                "operator_declaration",
                "conversion_operator_declaration",
            }
        ),
        classes=frozenset(
            {
                "class_declaration",
                "struct_declaration",
                "interface_declaration",
                "record_declaration",
                "record_struct_declaration",
                "enum_declaration",
            }
        ),
        namespaces=frozenset({"namespace_declaration"}),
        calls=(
            "(invocation_expression function: (_) @capture)",
            "(object_creation_expression type: (_) @capture)",
        ),
    ),
    "ruby": LanguageSpec(
        functions=frozenset({"method", "singleton_method"}),
        classes=frozenset({"class", "module"}),
        namespaces=frozenset({"singleton_class"}),
        calls=("(call method: (_) @capture)",),
    ),
    "php": LanguageSpec(
        functions=frozenset({"function_definition", "method_declaration"}),
        classes=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "trait_declaration",
                "enum_declaration",
            }
        ),
        namespaces=frozenset({"namespace_definition"}),
        calls=(
            "(function_call_expression function: (_) @capture)",
            "(member_call_expression name: (_) @capture)",
            "(nullsafe_member_call_expression name: (_) @capture)",
            "(scoped_call_expression name: (_) @capture)",
            "(object_creation_expression [(name) (qualified_name)] @capture)",
        ),
    ),
}

_IDENTIFIER_TYPES = frozenset(
    {
        "identifier",
        "property_identifier",
        "field_identifier",
        "type_identifier",
        "constant",
        "name",
        "simple_identifier",
        "private_property_identifier",
        "destructor_name",
        "operator_name",
        "namespace_identifier",
    }
)
_GENERIC_TYPES = frozenset(
    {"generic_type", "generic_name", "template_function", "template_type", "generic_function"}
)


def node_text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def leaf_name(node: Node | None, limit: int = 8) -> str | None:
    """The final identifier of a name-like node: ``a.b.c`` -> ``c``, ``ns::f<T>`` -> ``f``."""
    for _ in range(limit):
        if node is None:
            return None
        if node.type in _IDENTIFIER_TYPES:
            text = node_text(node).lstrip("$#")
            return text or None
        if node.type in _GENERIC_TYPES:
            inner = node.child_by_field_name("name") or node.child_by_field_name("function")
            node = inner or (node.named_children[0] if node.named_children else None)
            continue
        for field_name in ("name", "property", "field", "attribute", "method", "type"):
            child = node.child_by_field_name(field_name)
            if child is not None:
                node = child
                break
        else:
            named = node.named_children
            node = named[-1] if named else None
    return None


def body_of(node: Node) -> Node | None:
    """The node holding a class's or namespace's members."""
    body = node.child_by_field_name("body")
    if body is None and node.type == "type_definition":
        inner = node.child_by_field_name("type")
        body = inner.child_by_field_name("body") if inner is not None else None
    return body


def _declarator_name(node: Node | None) -> tuple[str | None, str | None]:
    """(owner, name) of a C/C++ function declarator chain; owner for ``A::m``."""
    for _ in range(16):
        if node is None:
            return None, None
        if node.type == "qualified_identifier":
            scope = leaf_name(node.child_by_field_name("scope"))
            name_node = node.child_by_field_name("name")
            while name_node is not None and name_node.type == "qualified_identifier":
                scope = leaf_name(name_node.child_by_field_name("scope")) or scope
                name_node = name_node.child_by_field_name("name")
            return scope, leaf_name(name_node)
        if node.type in _IDENTIFIER_TYPES:
            return None, node_text(node)
        node = node.child_by_field_name("declarator")
    return None, None


def definition_name(node: Node, grammar: str) -> tuple[str | None, str | None]:
    """(owner, name) of a function or class node; owner is set for methods defined
    outside their type (Go receivers, C++ ``A::m``)."""
    kind = node.type
    if grammar in ("c", "cpp") and kind == "function_definition":
        return _declarator_name(node.child_by_field_name("declarator"))
    if kind == "type_definition":
        return None, leaf_name(node.child_by_field_name("declarator"))
    if grammar == "go":
        if kind == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            owner = None
            if receiver is not None:
                for child in _descendants(receiver):
                    if child.type == "type_identifier":
                        owner = node_text(child)
                        break
            return owner, node_text(node.child_by_field_name("name")) or None
        if kind == "type_declaration":
            for spec in node.named_children:
                if spec.type in ("type_spec", "type_alias"):
                    return None, node_text(spec.child_by_field_name("name")) or None
            return None, None
    if kind == "impl_item":
        return None, leaf_name(node.child_by_field_name("type"))
    name = node.child_by_field_name("name")
    if name is None:
        return None, None
    if name.type in ("scope_resolution", "qualified_name"):  # Ruby `class A::B`
        return None, leaf_name(name)
    return None, node_text(name) or None


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(current.named_children))
    return found
