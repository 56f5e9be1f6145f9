"""tree-sitter-cpp parsing, created lazily so that ``mpslint --version`` never loads it."""

from __future__ import annotations

_PARSER = None


def parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter_cpp
        from tree_sitter import Language, Parser

        _PARSER = Parser(Language(tree_sitter_cpp.language()))
    return _PARSER


def parse(masked_text: str):
    """Parse already-masked text; returns the tree-sitter tree."""
    return parser().parse(masked_text.encode("utf-8"))


def error_counts(tree) -> tuple[int, int]:
    """(ERROR nodes, MISSING nodes) left in the tree."""
    errors = missing = 0
    cursor = tree.walk()
    visited_children = False
    while True:
        if not visited_children:
            node = cursor.node
            if node.type == "ERROR":
                errors += 1
            elif node.is_missing:
                missing += 1
            if node.has_error and cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited_children = False
            continue
        if not cursor.goto_parent():
            break
        visited_children = True
    return errors, missing
