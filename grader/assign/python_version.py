"""The ``.py`` version of a student's notebook, in Jupytext's percent format (``# %%`` cells), so it opens as a
notebook in VS Code, Spyder or Jupytext and runs as a script.

- The first markdown cell (the introduction) is the module docstring, followed by how to use this file.
- Every other markdown cell is a ``# %% [markdown]`` block of comments.
- Code cells are ``# %%`` blocks; demo cells (tagged ``demo`` in the solution) run under
  ``if __name__ == "__main__":``, so importing the file, as the grader does, defines the answers without running
  the examples. IPython lines (``%magic``, ``!shell``) are commented out: they are not Python.
- A written-answer cell (tagged ``answer:<id>``) is the string ``ANSWER_<ID>``, where the grader looks for it.
- The file ends with the student kit's check, under ``if __name__ == "__main__":``, after the examples.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from nbformat import NotebookNode

from grader.assign.student_notebook import CHECK_CELL_IDS, CHECK_CODE, answer_id, check_your_work, wrap_paragraphs
from grader.discover.program import PLACEHOLDER_ANSWER
from grader.errors import ConfigurationError


def _comment(text: str) -> str:
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines())


def _docstring(text: str, *, name: str) -> str:
    if '"""' in text:
        raise ConfigurationError(f'{name}: the introduction holds """, which cannot go into the .py docstring')
    prefix = "r" if "\\" in text else ""  # LaTeX in the markdown: keep the backslashes as written
    return f'{prefix}"""{text.rstrip()}\n"""'


def _python_lines(source: str) -> str:
    return "\n".join(f"# {line}" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _code_block(cell: NotebookNode, *, name: str, demo: bool) -> str:
    code = _python_lines(cell.source).rstrip()
    try:
        ast.parse(code)
    except SyntaxError as exc:
        raise ConfigurationError(f"{name}: cell {cell.get('id')!r} of the template is not valid Python "
                                 f"(line {exc.lineno}: {exc.msg})") from None
    if demo:
        body = "\n".join(f"    {line}" if line.strip() else "" for line in code.splitlines())
        code = f'if __name__ == "__main__":\n{body}'
    return f"# %%\n{code}"


def _answer_block(cell: NotebookNode, answer: str) -> str:
    lines = cell.source.splitlines()
    prompt = [line for line in lines if line.strip() and line.strip() != PLACEHOLDER_ANSWER]
    body = "\n".join(line for line in lines if line.strip() == PLACEHOLDER_ANSWER) or PLACEHOLDER_ANSWER
    comments = f"{_comment(chr(10).join(prompt))} (write it in this string)\n" if prompt else ""
    return f'# %%\n{comments}ANSWER_{answer.upper()} = """\n{body}\n"""'


def python_version(notebook: NotebookNode, *, name: str, demos: Collection[str] = ()) -> str:
    """The text of ``<name>.py`` for the student notebook built by ``student_notebook``; ``demos`` are the ids of
    the demo cells."""
    intro, *cells = notebook.cells
    usage = wrap_paragraphs(
        f"This file is the Python version of {name}.ipynb, with the same contents: the instructions are in this "
        f"docstring and in the comments of the `# %% [markdown]` cells, and the examples run under "
        f'`if __name__ == "__main__":` (run `python {name}.py`), and then the check of your work (see the end of '
        f"this file).")
    blocks = [_docstring(f"{intro.source.rstrip()}\n\n{usage}", name=name)]
    for cell in cells:
        if cell.get("id") in CHECK_CELL_IDS:
            continue
        if (answer := answer_id(cell)) is not None:
            blocks.append(_answer_block(cell, answer))
        elif cell.cell_type == "markdown":
            blocks.append(f"# %% [markdown]\n{_comment(cell.source)}")
        elif cell.cell_type == "code":
            blocks.append(_code_block(cell, name=name, demo=cell.get("id") in demos))
    blocks.append(f"# %% [markdown]\n{_comment(check_your_work(name, kind='python'))}")
    check = "\n".join(f"    {line}" if line else "" for line in CHECK_CODE.splitlines())
    blocks.append(f'# %%\nif __name__ == "__main__":\n{check}')
    text = "\n\n\n".join(blocks) + "\n"
    ast.parse(text)  # every part parsed on its own above; this catches a docstring that ends early
    return text
