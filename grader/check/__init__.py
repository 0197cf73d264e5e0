"""Check stage: what ``solutions/<name>/checks.py`` builds on, and the runner that applies it to a submission."""

from grader.adjust.late import LatePolicy
from grader.check.context import CheckContext
from grader.check.load import available_assignments, load_assignment, load_solution_module
from grader.check.spec import Assignment, CheckSpec, Question, WrittenQuestion
from grader.check.variants import substitutable
from grader.execute.student import StudentObject
from grader.execute.values import Arg
from grader.results import HIDDEN, PUBLIC

__all__ = ["HIDDEN", "PUBLIC", "Arg", "Assignment", "CheckContext", "CheckSpec", "LatePolicy", "Question",
           "StudentObject", "WrittenQuestion", "available_assignments", "load_assignment", "load_solution_module",
           "substitutable"]
