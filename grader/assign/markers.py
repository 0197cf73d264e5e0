"""nbgrader's solution markers: the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` are the instructor's
answer, which the student's template replaces with a stub.

In a code cell the stub is ``# YOUR CODE HERE`` and ``raise NotImplementedError`` at the indentation of the BEGIN
line, so the template still runs up to the first unanswered call and the grader's message names the function.
In a markdown cell (a written answer) it is the placeholder the grader strips from answers
(``PLACEHOLDER_ANSWER``), so an untouched template hands in an empty answer.
"""

from __future__ import annotations

from grader.discover.program import CODE_STUB, PLACEHOLDER_ANSWER
from grader.errors import ConfigurationError

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def has_markers(source: str) -> bool:
    return any(line.strip().startswith((BEGIN, END)) for line in source.splitlines())


def strip_solutions(source: str, *, code: bool, where: str) -> str:
    """``source`` with every marked solution replaced by the stub; ``where`` names the cell in error messages."""
    out: list[str] = []
    begun: int | None = None  # line number of the open BEGIN marker
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker.startswith(BEGIN):
            if begun is not None:
                raise ConfigurationError(f"{where}, line {number}: {BEGIN} inside the solution begun at line {begun}")
            begun = number
            indent = line[:len(line) - len(line.lstrip())]
            out += [indent + stub for stub in CODE_STUB] if code else [indent + PLACEHOLDER_ANSWER]
        elif marker.startswith(END):
            if begun is None:
                raise ConfigurationError(f"{where}, line {number}: {END} without a {BEGIN} before it")
            begun = None
        elif begun is None:
            out.append(line)
    if begun is not None:
        raise ConfigurationError(f"{where}, line {begun}: {BEGIN} is never ended by {END}")
    return "\n".join(out)
