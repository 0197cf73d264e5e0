"""Student templates generated from the instructor's solution notebook (``grader assign``), nbgrader style."""

from grader.assign.templates import (
    SOLUTION_SOURCE,
    read_solution,
    stale_templates,
    template_files,
    with_solution_source,
    write_templates,
)

__all__ = ["SOLUTION_SOURCE", "read_solution", "stale_templates", "template_files", "with_solution_source",
           "write_templates"]
