"""Check stage: what ``solutions/<name>/checks.py`` builds on, and the runner that applies it to a submission.

This package's namespace is the whole vocabulary of an assignment's own files (``checks.py``, ``variants.py``,
``reference_*.py``): they import from ``grader.check`` only, whatever module a name lives in. The grader's own modules
import the submodules (``grader.check.load``, ``grader.check.runner``) instead, so that none of them waits on this
namespace being complete.
"""

from grader.check.calibration import KERNELS, Calibration
from grader.check.compare import compare_tensor
from grader.check.context import CheckContext
from grader.check.load import available_assignments, load_assignment, load_solution_module
from grader.check.spec import Assignment, CheckSpec, Question, RubricItem, WrittenQuestion
from grader.check.staged import Decided, Stage, StagedVerdict, calibrate, error_rates
from grader.check.student import StudentFunction, StudentObject
from grader.check.variants import memoised, substitutable
from grader.errors import StudentRaised, WrongAnswer
from grader.execute.arguments import Arg, Returned
from grader.execute.limits import Limits
from grader.paths import assignment_file
from grader.results import HIDDEN, PUBLIC
from grader.times import LatePolicy

__all__ = ["HIDDEN", "KERNELS", "PUBLIC", "Arg", "Assignment", "Calibration", "CheckContext", "CheckSpec", "Decided",
           "LatePolicy", "Limits", "Question", "Returned", "RubricItem", "Stage", "StagedVerdict", "StudentFunction",
           "StudentObject", "StudentRaised", "WrittenQuestion", "WrongAnswer", "assignment_file",
           "available_assignments", "calibrate", "compare_tensor", "error_rates", "load_assignment",
           "load_solution_module", "memoised", "substitutable"]
