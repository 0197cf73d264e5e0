"""Execute stage: run a submission in a separate, limited process and call into it with plain data."""

from grader.execute.limits import Limits
from grader.execute.process import LoadedUnit, StudentProcess
from grader.execute.student import StudentCode, StudentObject
from grader.execute.values import Arg, Returned

__all__ = ["Arg", "Limits", "LoadedUnit", "Returned", "StudentCode", "StudentObject", "StudentProcess"]
