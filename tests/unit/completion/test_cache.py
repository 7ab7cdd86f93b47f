"""The suggestion cache: exact hits by context, typing-through a suggestion's start."""

from dg_lsp.completion.cache import SuggestionCache, SuggestionContext, rest_after_typing, typed_since

DOC = "def area(r):\n    return "
SUFFIX = "\n\nprint(area(2))\n"


def _ctx(typed="", doc=DOC, suffix=SUFFIX, variant=("v",), key="a.py"):
    prefix = doc + typed
    return SuggestionContext(key, prefix, suffix, len(prefix), variant)


def test_typed_since_needs_the_same_place_and_suffix():
    old = _ctx()
    assert typed_since(old, _ctx("3.14")) == "3.14"
    assert typed_since(old, _ctx()) == ""
    assert typed_since(old, _ctx("3", suffix="\n")) is None  # the text after the cursor changed
    assert typed_since(old, _ctx("3", variant=("w",))) is None  # other settings
    assert typed_since(old, _ctx("3", key="b.py")) is None
    assert typed_since(_ctx("3.14"), old) is None  # moving back is not typing
    moved = SuggestionContext("a.py", "x = 1\n" + DOC, SUFFIX, len(DOC) + 6, ("v",))
    assert typed_since(old, moved) is None  # same length change, but an edit above, not typing


def test_rest_after_typing():
    old = _ctx()
    assert rest_after_typing(old, "3.14 * r * r", _ctx("3.1")) == "4 * r * r"
    assert rest_after_typing(old, "3.14 * r * r", _ctx("2")) is None
    assert rest_after_typing(old, "3.14", _ctx("3.14")) is None  # nothing left to show


def test_exact_hits_and_typing_through():
    cache = SuggestionCache(capacity=2)
    cache.put(_ctx(), "3.14 * r * r")
    assert cache.get(_ctx()) == ("3.14 * r * r", ())
    assert cache.get(_ctx("3")) is None
    assert cache.type_through(_ctx("3.")) == ("14 * r * r", ())
    assert cache.type_through(_ctx("4")) is None
    cache.put(_ctx("x"), "")
    cache.put(_ctx("y"), "z")
    assert len(cache) == 2 and cache.get(_ctx()) is None  # least recently used went
    assert cache.type_through(_ctx("3.1")) == ("4 * r * r", ())  # recent suggestions of the document remain


def test_exact_hits_stay_within_a_document():
    cache = SuggestionCache()
    cache.put(_ctx(key="a.py"), "3.14")
    assert cache.get(_ctx(key="b.py")) is None and cache.get(_ctx(key="a.py")) == ("3.14", ())


def test_other_items_are_kept_and_typed_through():
    """An explicit request's other items come back with the answer, and typing keeps those whose start was typed."""
    cache = SuggestionCache()
    cache.put(_ctx(), "r * r * 3.14", ("3.14 * r * r", "3.14 * r ** 2", "2 * r"))
    assert cache.get(_ctx()) == ("r * r * 3.14", ("3.14 * r * r", "3.14 * r ** 2", "2 * r"))
    # the answer does not start with what was typed: the first other that does leads
    assert cache.type_through(_ctx("3.14 * r")) == (" * r", (" ** 2",))
    assert cache.type_through(_ctx("r")) == (" * r * 3.14", ())
    assert cache.type_through(_ctx("5")) is None
