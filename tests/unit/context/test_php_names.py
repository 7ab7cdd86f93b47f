"""PHP's variables read where their function gives them no value (context/bindings/php_names.py), and what the
server does with a suggestion or a selection fill that reads one (completion/unbound.py)."""

from __future__ import annotations

from dg_lsp.completion.unbound import fill_names, unbound_names
from dg_lsp.context.bindings.php_names import php_unbound, unbound_php_reads

SOURCE = """<?php
class A
{
    private $y;

    public function f(array $a, $b)
    {
        static $memo;
        global $config;
        $total = 0;
        foreach ($a as $k => $v) {
            $total += $v;
        }
        preg_match('/x/', $b, $m);
        $rows[] = $m[0];
        $o = ['k' => $ghost1, $rows];
        $cb = function ($z) use ($total) {
            return $z + $total + $outer;
        };
        $fn = fn($q) => $q + $total + $ghost2;
        echo "$ghost3 {$total}";
        self::$cache = $this->y ?? $maybe;
        try {
        } catch (\\Exception $e) {
            return $e;
        }
        [$first, $second] = $a;
        return $total + $missing + ($nn ?? 0) + $first + $memo + $config + count($_SERVER);
    }
}

function g()
{
    include 'x.php';
    return $fromInclude;
}

function h($name)
{
    return ${$name} + $other;
}

$top = $script;
"""


def test_the_reads_nothing_gives_a_value_and_only_those():
    names = [name for name, _ in php_unbound(SOURCE)]
    # a closure sees its parameters and its `use` list only; an arrow function sees its parent's variables
    assert names == ["$ghost1", "$outer", "$ghost2", "$ghost3", "$maybe", "$missing"]
    for name, offset in php_unbound(SOURCE):
        assert SOURCE[offset:offset + len(name)] == name


def test_nothing_is_known_outside_functions_or_where_a_function_can_have_unseen_variables():
    names = {name for name, _ in php_unbound(SOURCE)}
    # top-level code (a script's variables come from what includes it), an include, a variable variable
    assert not names & {"$script", "$fromInclude", "$other"}
    broken = SOURCE.replace("$total = 0;", "$total = (0;")
    assert "$missing" not in {name for name, _ in php_unbound(broken)}  # the function does not parse clean


def test_a_span_is_claimed_only_for_variables_read_unset_nowhere_else():
    at = SOURCE.index("$missing")
    assert unbound_php_reads(SOURCE, at, at + len("$missing")) == [("$missing", at)]
    # the read finished by the span counts (`$mis` typed, `sing` suggested)
    assert unbound_php_reads(SOURCE, at + 4, at + len("$missing")) == [("$missing", at)]
    # a variable the function reads unset outside the span too is not the span's doing
    twice = SOURCE.replace("+ ($nn ?? 0)", "+ $missing")
    at = twice.index("$missing")
    assert unbound_php_reads(twice, at, at + len("$missing")) == []
    at = SOURCE.index("$script")
    assert unbound_php_reads(SOURCE, at, at + len("$script")) == []


DOC = """<?php
function total(array $items): int
{
    $sum = 0;
    foreach ($items as $item) {
        $sum += $item->price;
    }
    return $sum;
}
"""


def _pos(text: str, needle: str, after: bool = False) -> tuple[int, int]:
    at = text.index(needle) + (len(needle) if after else 0)
    line = text.count("\n", 0, at)
    return line, at - (text.rfind("\n", 0, at) + 1)


def test_a_suggestion_that_reads_a_made_up_variable_is_claimed():
    start = _pos(DOC, "$sum;")
    document = DOC[:DOC.index("$sum;")] + DOC[DOC.index("$sum;") + 4:]  # `return ;`, the cursor after `return `
    assert unbound_names(document, start, start, "$total", "php") == [("$total", 0)]
    assert unbound_names(document, start, start, "$sum", "php") == []
    assert unbound_names(document, start, start, "count($items) * $sum", "php") == []


def test_a_fill_that_drops_what_the_code_after_it_reads_is_named():
    start, end = _pos(DOC, "$sum = 0;"), _pos(DOC, "$sum = 0;", after=True)
    assert fill_names(DOC, start, end, "$count = 0;", "php") == ([], ["$sum"])
    assert fill_names(DOC, start, end, "$sum = $start;", "php") == (["$start"], [])
    assert fill_names(DOC, start, end, "$sum = 0.0;", "php") == ([], [])
