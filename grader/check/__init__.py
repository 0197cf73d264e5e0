"""Check stage: what ``solutions/<name>/checks.py`` builds on, and the runner that applies it to a submission."""

from grader.adjust.late import LatePolicy
from grader.check.context import CheckContext
from grader.check.load import load_assignment, load_solution_module
from grader.check.spec import Assignment, CheckSpec, Question, WrittenQuestion
from grader.check.student import StudentObject
from grader.execute.arguments import Arg

__all__ = ["Arg", "Assignment", "CheckContext", "CheckSpec", "LatePolicy", "Question", "StudentObject",
           "WrittenQuestion", "load_assignment", "load_solution_module"]
