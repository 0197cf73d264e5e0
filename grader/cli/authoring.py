"""What the commands that load an assignment warn its author about: names another assignment asks for too (students'
files would be told apart by less), and rubrics that cannot count as meant (``Assignment.authoring_warnings``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def asked_elsewhere(names: Sequence[str], solutions: Path) -> list[str]:
    """Warnings for the names ``names``' assignments ask for that another assignment in ``solutions`` asks for."""
    from grader.check.load import available_assignments, load_assignment
    from grader.discover.assignment_of import shared_name_warnings

    asked = {n: load_assignment(n, solutions_dir=solutions).withheld_names for n in available_assignments(solutions)}
    return shared_name_warnings(asked, involving=names)


def authoring_warnings(names: Sequence[str], solutions: Path) -> list[str]:
    """Each assignment's own warnings (its rubrics), each line starting "warning: "."""
    from grader.check.load import is_assignment, load_assignment

    return [f"warning: {line}" for name in names if is_assignment(solutions / name)  # the command says what else
            for line in load_assignment(name, solutions_dir=solutions).authoring_warnings()]
