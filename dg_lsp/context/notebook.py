"""A notebook's cells as one document, for a completion inside one of them.

An editor sends a notebook's cells as separate text documents. Alone, a cell lacks what the cells above it define:
the model does not see the imports and the data frame of the first cells, and the name check would refuse a line
that reads them. Here a code cell is read inside the whole notebook, written as a percent-format script (the
format jupytext and VS Code's Python tools read and write, which code models have seen):

    # %% [markdown]
    # # Load the data
    # %%
    import pandas as pd
    df = pd.read_csv("x.csv")

    # %%
    df.<cursor>

- Code cells of the cell's own language are kept; other code cells are left out. Markdown cells become comments
  (for languages whose line comment is known), so the model reads what the author wrote above the code.
- Python: IPython's line magics and shell escapes (`%matplotlib inline`, `!pip install x`) in other cells become
  comments, as does a cell magic's cell (`%%bash`), all but its first line for the ones that run Python
  (`%%time`, `%%timeit`, `%%capture`). In the cell itself, such lines outside the hole's lines become comments too
  (the hole's own lines stay exactly as they are: the answer is placed by them).
- Every cell keeps its line count, so a position in the cell is the same position `shift` lines further down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dg_lsp.context.document import LINE_BREAK

CODE, MARKUP = "code", "markup"

# the line comment of each language the server reads (`languages.LANGUAGES`), for the markers and markdown cells
_COMMENT = {"python": "#", "javascript": "//", "typescript": "//", "tsx": "//", "c": "//", "cpp": "//",
            "java": "//", "go": "//", "rust": "//", "csharp": "//", "php": "//",
            "ruby": "#", "lua": "--", "bash": "#"}
# cell magics whose cell is Python after its first line
_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun")


@dataclass(frozen=True)
class Cell:
    kind: str  # CODE or MARKUP
    language: str | None  # the cell's language (a canonical name, `languages.normalize_language`), None if unknown
    text: str


@dataclass(frozen=True)
class NotebookView:
    text: str  # the notebook as one document
    shift: int  # lines before the cell's first line in `text`


def _is_magic(line: str) -> bool:
    return line.lstrip().startswith(("%", "!"))


def _python_lines(lines: list[str], keep: range = range(0)) -> list[str]:
    """Magic lines as comments (the lines in `keep` as they are); a cell magic's cell all comments, but for
    `_PYTHON_CELL_MAGICS`' first line only."""
    first = next((line for line in lines if line.strip()), "")
    whole = first.lstrip().startswith("%%") and not first.lstrip().startswith(_PYTHON_CELL_MAGICS)
    return [line if row in keep or not (whole or _is_magic(line)) else f"# {line}" for row, line in enumerate(lines)]


def _code(cell: Cell, language: str, keep: range = range(0)) -> str:
    if language != "python":
        return cell.text
    lines = LINE_BREAK.split(cell.text)
    if not any(_is_magic(line) for line in lines):
        return cell.text
    breaks = LINE_BREAK.findall(cell.text) + [""]
    return "".join(line + brk for line, brk in zip(_python_lines(lines, keep), breaks))


def _markup(cell: Cell, comment: str) -> str:
    return "\n".join(f"{comment} {line}".rstrip() for line in LINE_BREAK.split(cell.text.strip("\r\n")))


# a line that starts a cell, as the model writes one after reading the view's markers: `# %%`, `# %% [markdown]`,
# `# [markdown]`, `// %%`, `# In[3]:`
_CELL_START = re.compile(r"[ \t]*(?:#|//)[ \t]*(?:%%|\[markdown\]|In[ \t]*\[)")


def has_cells(text: str) -> bool:
    """Whether `text` is itself a script of cells (a line that starts one: `# %%`, as VS Code's Python tools and
    jupytext write notebooks as scripts)."""
    return any(_CELL_START.match(line) for line in text.split("\n") if line.lstrip()[:1] in ("#", "/"))


def cut_at_cell_end(text: str, script: bool = False) -> str:
    """A cell's answer up to the first line that starts another cell: past it the model writes the next cells
    (`# %%`, markdown as comments), which are not the cell's code. "" where the answer starts with one. In a
    `script` of cells (`has_cells`), an answer's first line may start a cell (where the user begins a new one)."""
    lines = text.split("\n")
    for row, line in enumerate(lines):
        if _CELL_START.match(line) and not (script and row == 0):
            return "\n".join(lines[:row]) + ("\n" if row else "")
    return text


def notebook_view(cells: list[Cell], index: int, hole_lines: range = range(0)) -> NotebookView | None:
    """The notebook `cells` as one document around its code cell `index` (`hole_lines`: the cell's lines the
    request's hole spans, kept exactly), or None where that is not a code cell of a known language."""
    if not 0 <= index < len(cells) or cells[index].kind != CODE or cells[index].language is None:
        return None
    language = cells[index].language
    comment = _COMMENT.get(language)
    marker = f"{comment} %%" if comment else None
    parts: list[str] = []
    for i, cell in enumerate(cells):
        if i == index:
            parts.append(f"{marker}\n" if marker else "")
            shift = sum(len(LINE_BREAK.findall(part)) for part in parts)
            parts.append(_code(cell, language, hole_lines) + "\n\n")
        elif cell.kind == CODE and cell.language == language and cell.text.strip():
            parts.append((f"{marker}\n" if marker else "") + _code(cell, language).rstrip("\r\n") + "\n\n")
        elif cell.kind == MARKUP and comment and cell.text.strip():
            parts.append(f"{marker} [markdown]\n{_markup(cell, comment)}\n")
    return NotebookView("".join(parts), shift)
