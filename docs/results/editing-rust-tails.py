"""The editing diagnostic's select scenario at Rust functions' last expressions (one line, in a function with a
return type): scratch, session 41."""
import sys
from dg_lsp.bench.diagnostics import editing
from dg_lsp.context.languages import get_parser


def tails(text, language):
    lines = text.split("\n")
    rows, stack = set(), [get_parser(language).parse(text.encode("utf-8")).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "function_item":
            continue
        ret, body = node.child_by_field_name("return_type"), node.child_by_field_name("body")
        if ret is None or ret.type == "unit_type" or body is None:
            continue
        inner = [c for c in body.named_children if "comment" not in c.type]
        if len(inner) < 2:
            continue
        tail = inner[-1]
        if tail.type in ("expression_statement", "let_declaration") or tail.type.endswith("_item"):
            continue
        row = tail.start_point.row
        if row == tail.end_point.row and lines[row].strip() == tail.text.decode():
            rows.add(row)
    return rows


editing._tree_sitter_statements = tails
sys.exit(editing.main(sys.argv[1:]))
