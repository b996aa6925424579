"""Symbols: the definitions tree-sitter found, go to definition and find references."""
