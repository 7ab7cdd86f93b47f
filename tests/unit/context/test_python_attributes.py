"""Python attributes read on a method's `self` that nothing binds (`context.bindings.python_attributes
.unbound_attributes`): claimed only where the module shows everything that could bind them."""

from __future__ import annotations

import pytest

from dg_lsp.context.bindings.python_attributes import unbound_attributes

CLASS = '''class Queue:
    limit = 10

    def __init__(self, items):
        self._items = list(items)

    def push(self, item):
        self._items.append(item)

    def size(self):
        return len(self._items)

    def copy(self):
        return READ
'''


def claims(read: str, module: str = CLASS, body: str = "READ") -> list[str]:
    """The attributes claimed in `read`, put in place of `body` in `module`, with the span `read` itself."""
    source = module.replace(body, read)
    at = source.index(read)
    return [name for name, _ in unbound_attributes(source, at, at + len(read))]


def test_an_attribute_nothing_binds_is_claimed_where_it_is_read():
    source = CLASS.replace("READ", "self._copy()")
    at = source.index("self._copy()")
    assert unbound_attributes(source, at, at + len("self._copy()")) == [("self._copy", at)]


@pytest.mark.parametrize("read", ["self._items[:]", "self.size()", "self.limit", "self.push",
                                  "type(self)(self._items)", "self.__class__", "self.__wrapped__"])
def test_what_the_class_binds_and_the_dunders_are_not_claimed(read):
    assert claims(read) == []


def test_a_read_outside_the_span_is_not_claimed():
    source = CLASS.replace("READ", "self._copy()")
    at = source.index("len(")
    assert unbound_attributes(source, at, at + 10) == []


def test_an_attribute_whose_name_the_span_finishes_is_claimed():
    # `self._co` typed before the cursor, `py()` suggested
    source = CLASS.replace("READ", "self._copy()")
    at = source.index("py()")
    assert [name for name, _ in unbound_attributes(source, at, at + 4)] == ["self._copy"]


def test_the_first_parameter_is_the_instance_whatever_its_name():
    assert claims("this._copy()", CLASS.replace("def copy(self)", "def copy(this)")) == ["this._copy"]


def test_a_binding_anywhere_in_the_module_counts():
    assert claims("self.extra", CLASS + "\nq = Queue([])\nq.extra = 1\n") == []
    assert claims("self.extra", CLASS + "\nfor Queue.extra in []:\n    pass\n") == []
    # a string that is the name: __slots__, setattr with the name written out, hasattr
    assert claims("self.extra", CLASS + "\nsetattr(Queue, 'extra', 1)\n") == []
    assert claims("self.extra", CLASS + "\nhasattr(Queue([]), 'extra')\n") == []


def test_a_class_binds_for_its_family_not_for_other_classes():
    # a subclass's binding counts (a base class's method may read what its subclass sets); an unrelated class's not
    assert claims("self.extra", CLASS + "\nclass Sub(Queue):\n    def f(self):\n        self.extra = 1\n") == []
    assert claims("self.extra", CLASS + "\nclass Sub(Queue):\n    extra = 1\n") == []
    assert claims("self.extra", CLASS + "\nclass Other:\n    def f(self):\n        self.extra = 1\n") \
        == ["self.extra"]
    # a mixin's sibling base in a subclass: urllib's AbstractBasicAuthHandler reads BaseHandler's `parent`
    both = CLASS + "\nclass Base:\n    def add(self, parent):\n        self.extra = parent\n\n\n" \
                   "class Both(Queue, Base):\n    pass\n"
    assert claims("self.extra", both) == []


def test_setattr_on_an_instance_disables_only_its_family():
    dynamic = "\nclass Other:\n    def __init__(self, name):\n        setattr(self, name, 1)\n"
    assert claims("self._copy()", CLASS + dynamic) == ["self._copy"]
    assert claims("self._copy()", CLASS + dynamic.replace("class Other:", "class Other(Queue):")) == []
    # restoring a pickled state binds nothing new
    restore = "\n    def __setstate__(self, state):\n        self.__dict__.update(state)\n"
    assert claims("self._copy()", CLASS + restore) == ["self._copy"]


def test_builtin_bases_give_their_attributes_and_in_file_bases_are_followed():
    error = "class Base(Exception):\n    def f(self):\n        self.code = 1\n\n\nclass E(Base):\n    def g(self):\n" \
            "        return READ\n"
    assert claims("self.args + self.with_traceback(None)", error) == []
    assert claims("self.code", error) == []
    assert claims("self.cause", error) == ["self.cause"]


@pytest.mark.parametrize("module", [
    CLASS.replace("class Queue:", "from collections import deque\n\n\nclass Queue(deque):"),  # a base from elsewhere
    CLASS.replace("class Queue:", "class Queue(base.Base):"),
    CLASS.replace("class Queue:", "class Queue(metaclass=Meta):"),
    CLASS.replace("class Queue:", "class Queue(type):"),  # a metaclass: its instances are classes
    CLASS.replace("class Queue:", "@attr.s\nclass Queue:"),  # a decorator that may add attributes
    CLASS.replace("class Queue:", "class QueueMixin:"),
    CLASS + "\n    def __getattr__(self, name):\n        return 1\n",
    CLASS + "\nclass Both(Queue, Elsewhere):\n    pass\n",  # a mixin's attributes from a sibling base
    CLASS + "\nq = Queue([])\nsetattr(q, name, 1)\n",  # a name not written out
    CLASS + "\nq = Queue([])\nq.__dict__.update({})\n",
    CLASS + "\nvars(Queue([])).update({})\n",
    CLASS + "\nfrom elsewhere import *\n",
    CLASS + "\nMade = type('Made', (Queue, Other), {})\n",  # a class made at run time
    CLASS + "\nclass Queue:\n    pass\n",  # defined twice
    CLASS.replace("def copy(self):", "def copy(self):\n        self = other"),  # the instance rebound
    CLASS.replace("def size(self):\n        return len(self._items)", "def size(self):\n        return self.count"),
])
def test_nothing_is_claimed_where_the_module_may_not_show_every_attribute(module):
    # the last: the class's code outside the span already reads what nothing binds (a base class others complete)
    assert claims("self._copy()", module) == []


def test_decorators_that_add_no_attribute_leave_the_class_known():
    for decorator in ("@dataclasses.dataclass(frozen=True)", "@functools.total_ordering", "@abc.ABC.register"):
        assert claims("self._copy()", CLASS.replace("class Queue:", f"{decorator}\nclass Queue:")) == ["self._copy"]


def test_a_shadowed_builtin_base_is_not_the_builtin():
    module = "Exception = dict\n\n\nclass E(Exception):\n    def f(self):\n        return READ\n"
    assert claims("self.args", module) == []
    assert claims("self.args", module.replace("Exception = dict\n", "")) == []
    assert claims("self.nothing", module) == []  # `Exception` is not known here: nothing claimed
    assert claims("self.nothing", module.replace("Exception = dict\n", "")) == ["self.nothing"]


def test_static_and_class_methods():
    static = CLASS.replace("    def copy(self):", "    @staticmethod\n    def copy(self):")
    assert claims("self._copy()", static) == []
    klass = CLASS.replace("    def copy(self):", "    @classmethod\n    def copy(cls):")
    assert claims("cls.mro()", klass) == []  # `type`'s attributes
    assert claims("cls._copy()", klass) == ["cls._copy"]


def test_a_function_inside_the_method_with_its_own_self_is_left_out():
    inner = "(lambda self: self._copy())(1) + [self._copy2 for _ in ()]"
    assert claims(inner) == ["self._copy2"]


def test_nothing_is_known_where_the_module_does_not_parse():
    source = CLASS.replace("READ", "self._copy(")
    assert unbound_attributes(source, 0, len(source)) == []
    assert unbound_attributes(CLASS, 5, 5) == []


def test_a_read_an_attribute_error_handler_expects_is_not_claimed():
    guarded = "try:\n            return self._cache\n        except AttributeError:\n            return None"
    assert claims(guarded, body="return READ") == []
    other = guarded.replace("AttributeError", "KeyError")
    assert claims(other, body="return READ") == ["self._cache"]
    # a function defined in the guarded body runs later, unguarded
    later = "try:\n            f = lambda: self._cache\n        except AttributeError:\n            f = None\n" \
            "        return f"
    assert claims(later, body="return READ") == ["self._cache"]
