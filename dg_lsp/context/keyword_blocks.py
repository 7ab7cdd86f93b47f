"""The keyword stack that Lua's and Bash's line readings share (`context/lua_blocks.py`, `context/bash_blocks.py`): an
`if` waiting for its `then`, the clauses that go on with it (`elseif` or `elif`, `else`), a loop waiting for its `do`.
A kind that starts with `?` is a header still waiting for its keyword."""

from __future__ import annotations


def read_conditional(stack: list[str], word: str, elif_word: str, loops: tuple[str, ...]) -> bool:
    """Apply `word` to `stack` (the kinds a line opens, outermost first) where it is `if`, `then`, `elif_word`,
    `else`, one of `loops` or `do`; False for any other word (the caller reads it)."""
    top = stack[-1] if stack else None
    if word == "if":
        stack.append("?if")
    elif word in (elif_word, "else"):
        kind = "?" + elif_word if word == elif_word else "else"
        if top in ("if", elif_word, "then"):
            stack[-1] = kind  # the same block goes on
        else:
            stack.append(kind)
    elif word == "then":
        if top in ("?if", "?" + elif_word):
            stack[-1] = top[1:]
        else:
            stack.append("then")
    elif word in loops:
        stack.append("?do")
    elif word == "do":
        if top == "?do":
            stack[-1] = "do"
        else:
            stack.append("do")
    else:
        return False
    return True
