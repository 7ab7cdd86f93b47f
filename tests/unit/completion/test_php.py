"""PHP: what the server shows for an engine answer in a PHP document (`finish_suggestion` on the request's context:
the windows, post-processing, the syntax gate with tree-sitter-php's PHP-only grammar), in a PSR-12 class."""

from __future__ import annotations

from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context

from .holes import shown_at_hole

CLASS = """<?php

declare(strict_types=1);

namespace Demo;

#[Service(name: 'calc')]
final class Calc
{
    # a hash comment with a ( in it
    public function add(int $a, int $b): int
    {
        $total = @@
        return $total;
    }

    public function name(int $n): string
    {
        @@
        return "n{$n}";
    }
}
"""


def _shown(text: str, hole: int = 0) -> str:
    """The shown text for the engine answer `text` at the `hole`-th @@ of CLASS (the others removed)."""
    return shown_at_hole(CLASS, "php", text, hole)


def test_the_class_and_method_are_the_scopes_and_the_attribute_heads_the_class():
    lines = CLASS.split("\n")
    row = next(i for i, line in enumerate(lines) if "$total = @@" in line)
    ctx = extract_context(CLASS.replace("@@", ""), "php", row, lines[row].index("@@"))
    assert [(s.kind, s.name) for s in ctx.scopes] == [("class", "Calc"), ("method", "add")]
    assert lines[ctx.scopes[0].start_line].startswith("#[Service")


def test_a_clean_rest_of_line_is_shown_and_text_that_repeats_the_next_line_is_dropped():
    assert _shown("$a + $b;") == "$a + $b;"
    assert _shown("$a + $b;\n        return $total;") == "$a + $b;"


def test_broken_text_is_not_shown_or_cut_to_its_clean_start():
    assert _shown("sprintf('%d, $a);") == ""  # a string it does not close
    assert _shown("$a + ($b;") == ""  # a bracket it leaves open on the statement's only line
    assert _shown("$a + $b; }") == ""  # a closer that would end the method early


def test_a_block_statement_at_a_blank_line_is_shown_through_its_closing_brace():
    block = "if ($n < 0) {\n            $n = -$n;\n        }"
    assert _shown(block + "\n        return (string) $n;", hole=1) == block
    assert _shown("if ($n < 0) {\n", hole=1) == ""  # a block left open would take in the user's `return`
    assert _shown("$n = abs($n);\n        return (string) $n;", hole=1) == "$n = abs($n);"


def test_hash_comments_hide_their_brackets_and_attributes_do_not():
    from dg_lsp.completion.brackets import open_brackets

    assert open_brackets("f(1); # g(\n$x = [", "php") == ["["]
    assert open_brackets("f(1); // g(\n$x = [", "php") == ["["]
    assert open_brackets("#[Route('/a', methods: [\n", "php") == ["[", "(", "["]


def test_a_variable_the_method_never_sets_is_not_shown():
    """PHP reads an unset variable as null with a warning: `$c` appears nowhere in `add`, so the answer is refused;
    at a blank line the statements before the one that reads it are kept."""
    assert _shown("$a + $c;") == ""
    assert _shown("$a * $b;") == "$a * $b;"
    kept = "$n = abs($n);"
    assert _shown(kept + "\n        $label = $prefix . $n;\n        return $label;", hole=1) == kept


def test_a_method_read_without_its_class_parses_as_the_gate_reads_it():
    """PHP's grammar reads `public function` with no class around it as an error (Java's and C#'s take a method
    alone), so a window or scope cut below the class's `{` read every method as broken; the gate reads members'
    modifiers blanked, offsets unchanged (symfony/console's ArgvInput and ReStructuredTextDescriptor: a line's rest
    `rn $commands;` was refused)."""
    from dg_lsp.context.syntax import error_spans, readable

    members = ("    #[Required]\n    public static function make(): static\n    {\n        return new static();\n"
               "    }\n\n    public const A = 1;\n    final public function &ref() { return $this->items; }\n")
    assert error_spans(members, "php") == []
    assert len(readable(members, "php")) == len(members)
    assert "public" not in readable(members, "php") and readable(members, "java") == members
    # inside its class a member without its modifiers is still one; a property keeps them (`$x;` is no member)
    whole = ("<?php\nabstract class A\n{\n    private ?Foo\\Bar $cache = null;\n"
             "    protected static array $items = [];\n"
             + members + "    abstract protected function g(): int;\n}\n")
    assert error_spans(whole, "php") == [] and "private ?Foo" in readable(whole, "php")
    method = "    public function total(array $xs): int\n    {\n        $sum = 0;\n        retu"
    ctx = extract_context(method + "\n    }\n", "php", 3, 12)
    suffix = "\n    }\n"
    assert finish_suggestion("rn $sum;", [], method, ctx, selection=False, max_lines=8,
                             document=method + suffix) == "rn $sum;"


def test_a_doc_comment_opened_and_not_closed_is_not_shown_even_where_the_window_is_broken():
    """PHP's grammar reads an unclosed `/**` as stray tokens: where the method's header line is missing (the hole is
    that line), they counted as fewer errors than the window had without the text (symfony/console's
    BufferedOutput, a wrong line in the gate check)."""
    from dg_lsp.completion.gate_structure import opens_block_comment

    document = ("<?php\n\nclass BufferedOutput extends Output\n{\n    private string $buffer = '';\n\n"
                "    public function fetch(): string\n    {\n        $content = $this->buffer;\n"
                "        $this->buffer = '';\n\n        return $content;\n    }\n\n"
                "\n    {\n        $this->buffer .= $message;\n\n        if ($newline) {\n"
                "            $this->buffer .= \\PHP_EOL;\n        }\n    }\n}\n")
    row = 14  # the missing header's line
    ctx = extract_context(document, "php", row, 0)
    prefix = "\n".join(document.split("\n")[:row]) + "\n"
    shown = finish_suggestion("    /**\n", [], ctx.prefix, ctx, selection=False, max_lines=8, document=document)
    assert prefix.endswith(ctx.prefix) and shown == ""
    assert opens_block_comment("", "    /**\n", "php") and not opens_block_comment("", "    /** Writes. */\n", "php")
    assert not opens_block_comment("", "    // a /* in a comment\n", "php")
    assert not opens_block_comment("", "    $glob = '/*';\n", "php")
    assert not opens_block_comment("", "const re = /a\\/*b/", "javascript")
