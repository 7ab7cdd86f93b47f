"""context/names.py: the names the suffix reads that the prefix never mentions (Python, a lexical reading)."""

from dg_lsp.context.names import free_names

PREFIX = 'def max_element(l: list):\n    """Return the largest element."""\n'


def test_a_name_read_before_any_binding_and_unseen_in_the_prefix_is_free():
    suffix = "    for e in l:\n        if e > m:\n            m = e\n    return m\n"
    assert free_names(PREFIX, suffix, "python") == ("m",)  # `e` is bound by its loop first, `l` is in the prefix


def test_bound_names_builtins_attributes_keywords_and_strings_are_not_free():
    suffix = ("    total = 0\n    for a, b in pairs.items():\n        total += len(a) + b.size\n"
              "    print(sep=', ', end='x')\n    s = 'hidden words'  # comment words\n    return total\n")
    assert free_names(PREFIX, suffix, "python") == ("pairs",)
    assert free_names("import os\n", "    result = os.path.join(x)\n", "python") == ("x",)


def test_at_most_limit_names_in_order_of_appearance():
    assert free_names(PREFIX, "    return a + b + c\n", "python") == ("a", "b")
    assert free_names(PREFIX, "    return a + b + c\n", "python", limit=3) == ("a", "b", "c")


def test_only_python_and_only_where_no_code_precedes_the_cursor_on_its_line():
    suffix = "    return m\n"
    assert free_names(PREFIX, suffix, "javascript") == ()
    assert free_names(PREFIX, suffix, None) == ()
    assert free_names(PREFIX + "    x = ", suffix, "python") == ()
    assert free_names(PREFIX + "    ", suffix, "python") == ("m",)
    assert free_names(PREFIX, "    x = 1\n" * 6 + "    return m\n", "python") == ()  # past the lines read
