"""A notebook's cells as one document (`context.notebook.notebook_view`): the cell's lines exactly where `shift` says,
the other cells as a percent-format script around it, IPython's magics as comments."""

from __future__ import annotations

import ast

from dg_lsp.context.document import LINE_BREAK
from dg_lsp.context.notebook import CODE, MARKUP, Cell, notebook_view


def code(text: str, language: str | None = "python") -> Cell:
    return Cell(CODE, language, text)


def lines(text: str) -> list[str]:
    return LINE_BREAK.split(text)


def test_the_cell_sits_shift_lines_down_between_the_others():
    cells = [Cell(MARKUP, None, "# Title\n\nSome words.\n"), code("import math\nR = 2\n"), code("x = math.pi *\n"),
             code("print(x)\n")]
    view = notebook_view(cells, 2)
    assert view.text == ("# %% [markdown]\n# # Title\n#\n# Some words.\n"
                         "# %%\nimport math\nR = 2\n\n"
                         "# %%\nx = math.pi *\n\n\n"
                         "# %%\nprint(x)\n\n")
    assert lines(view.text)[view.shift:view.shift + 2] == ["x = math.pi *", ""]


def test_the_cells_own_line_breaks_and_trailing_lines_are_kept():
    cell = code("a = 1\r\nb = 2\r\n\r\n")
    view = notebook_view([code("z = 0"), cell], 1)
    assert view.text[view.text.index("a = 1"):].startswith(cell.text)
    got = lines(view.text)
    assert got[view.shift:view.shift + 4] == ["a = 1", "b = 2", "", ""]


def test_magics_become_comments_and_the_notebook_parses():
    cells = [code("%matplotlib inline\n!pip install x\nimport math\n"),
             code("%%bash\nls -l\necho hi\n"),
             code("%%time\ntotal = sum(range(3))\n"),
             code("  %load_ext autoreload\ny = math.tau\n!ls\nz = \n")]
    view = notebook_view(cells, 3, hole_lines=range(2, 4))
    body = lines(view.text)
    assert "# %matplotlib inline" in body and "# !pip install x" in body and "import math" in body
    assert "# %%bash" in body and "# ls -l" in body and "# echo hi" in body
    assert "# %%time" in body and "total = sum(range(3))" in body
    # in the cell itself: a magic above the hole's lines is a comment; the hole's lines stay as they are
    assert body[view.shift:view.shift + 4] == ["#   %load_ext autoreload", "y = math.tau", "!ls", "z = "]
    ast.parse(view.text.replace("!ls", "pass").replace("z = ", "z = 0"))


def test_other_languages_empty_cells_and_markdown_without_a_comment_syntax():
    cells = [code("x <- 1", "r"), code("   \n"), code("y = 1"), Cell(MARKUP, None, "words")]
    view = notebook_view(cells, 2)
    assert view.text == "# %%\ny = 1\n\n# %% [markdown]\n# words\n"
    js = notebook_view([Cell(MARKUP, None, "notes"), code("let a = 1;", "javascript")], 1)
    assert js.text == "// %% [markdown]\n// notes\n// %%\nlet a = 1;\n\n"
    assert js.shift == 3


def test_no_view_outside_a_code_cell_of_a_known_language():
    cells = [Cell(MARKUP, None, "words"), code("x = 1", None), code("y = 1")]
    assert notebook_view(cells, 0) is None
    assert notebook_view(cells, 1) is None
    assert notebook_view(cells, 3) is None and notebook_view(cells, -1) is None
    assert notebook_view(cells, 2) is not None


def test_an_answer_ends_where_it_starts_another_cell():
    from dg_lsp.context.notebook import cut_at_cell_end

    assert cut_at_cell_end("x = f(1)\n\n# %%\nprint(x)") == "x = f(1)\n\n"
    assert cut_at_cell_end("y = 2\n# %% [markdown]\n# Words") == "y = 2\n"
    assert cut_at_cell_end("y = 2\n  # [markdown]\n") == "y = 2\n"
    assert cut_at_cell_end("let a = 1;\n// %%\nlet b;") == "let a = 1;\n"
    assert cut_at_cell_end("# In[3]:\nz = 1") == ""
    assert cut_at_cell_end("# %%") == ""
    # a comment that is no cell's start, and a marker inside a line, stay
    assert cut_at_cell_end("x = 1  # %% here\n# plain comment\ny = 2") == "x = 1  # %% here\n# plain comment\ny = 2"


def test_a_script_of_cells_is_told_and_keeps_a_new_cell_its_answer_starts():
    from dg_lsp.context.notebook import cut_at_cell_end, has_cells

    assert has_cells("import math\n\n# %%\nx = 1\n") and has_cells("#%% setup\n") and has_cells("# In[2]:\n")
    assert not has_cells("x = 1  # %% inline\n# a comment\ny = '# %%'\n")
    # the user begins a new cell: kept; the cell after it is cut
    assert cut_at_cell_end("# %%\nprint(x)\n\n# %%\nprint(y)", script=True) == "# %%\nprint(x)\n\n"
    assert cut_at_cell_end("# %%\nprint(x)", script=False) == ""
    assert cut_at_cell_end("\n\n# %%\nprint(x)", script=True) == "\n\n"


def test_every_language_the_server_reads_has_its_markers():
    from dg_lsp.context.languages import LANGUAGES
    from dg_lsp.context.notebook import _COMMENT

    assert set(_COMMENT) == set(LANGUAGES)
