"""One exception root, with subclasses by whose fault it is; the CLI turns them into exit codes.

Each carries a student-facing ``message`` and an instructor-facing ``detail``.
"""

from __future__ import annotations

from typing import Any


class GraderError(Exception):
    exit_code = 1

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


class SubmissionError(GraderError):
    """The student's submission is at fault: it is recorded in their result and never stops the class."""


class InvalidSubmission(SubmissionError):
    """The file cannot be read as a notebook or a Python program."""


class StudentRaised(SubmissionError):
    """Student code raised an exception during a call. ``setup``: while the check was setting up what it grades
    (constructing the student's class), which fails the same way in every check of the question."""

    def __init__(self, message: str, *, exc_type: str, exc_message: str, traceback: str, setup: bool = False,
                 where: Any = None, called: str = "") -> None:
        super().__init__(message, f"{message}\n{traceback}".strip())
        self.exc_type = exc_type
        self.exc_message = exc_message
        self.traceback = traceback
        self.setup = setup
        # The last frame in the student's code as their process reported it: [filename, line, function, text]; or,
        # when it raised inside an answer the grader provides in place of theirs (``called``, one of the names the
        # assignment asks for), the student's line that called it.
        self.where = where
        self.called = called


class CallTimedOut(SubmissionError):
    """A call into student code ran past its limit; the student's process was killed. ``callee``: the student's
    callable a check called ("masked_softmax", "AdditiveAttention.forward"), when the call was one."""

    callee: str = ""


class NotCalledAgain(CallTimedOut):
    """A call not made: the student's callable ran past its time limit earlier in the same run, and would cost
    every later check that calls it the same limit (grader/check/student.py). Nothing ran, so nothing was killed."""


class ProcessDied(SubmissionError):
    """The student's process ended or broke the protocol while the grader waited for an answer."""


class WrongAnswer(SubmissionError):
    """A check found the student's answer wrong. ``hint`` is the part that is safe to show for hidden checks;
    ``misconception`` the id of a known mistake (a variant) the check recognised itself. ``values``: the answer had
    the right form but other values (what a smaller failing case can show); ``setup``: what the check grades could
    not be set up (a name not defined, weights with nowhere to go), which fails every check of the question alike."""

    def __init__(self, message: str, *, hint: str, detail: str = "", misconception: str | None = None,
                 values: bool = False, setup: bool = False) -> None:
        super().__init__(message, detail or message)
        self.hint = hint
        self.misconception = misconception
        self.values = values
        self.setup = setup


class ConfigurationError(GraderError):
    """The instructor's assignment, solutions or command line are at fault."""

    exit_code = 2


class SandboxUnavailable(ConfigurationError):
    """The isolation the run asks for (``--sandbox``) cannot be had on this machine: nothing is graded, and the
    message says what is missing, the command that gives it, and the explicit way to go on without it."""

    exit_code = 6


class GradebookDamaged(ConfigurationError):
    """OUT/gradebook.sqlite is not a database SQLite can read (overwritten, cut short, another file saved over it):
    nothing more is read or written, and the message names the file and how to start again from a fresh one."""

    exit_code = 7


class InfrastructureError(GraderError):
    """The grader could not do its job on this machine (cannot start Python, a worker that will not start, ...)."""

    exit_code = 3




class GradesNotPlaced(GraderError):
    """Every student was graded, but some grades could not be placed in a course platform's file (a student missing
    from the worksheet or gradebook the instructor gave): the message names them. Raised only after every file of
    the run is written, so nothing else is lost."""

    exit_code = 4


class StorageError(GraderError):
    """The machine refused to store what the grader writes: a full disk, a read-only folder, a permission denied.
    What was graded and recorded before stays; the same command, once the cause is fixed, goes on from there."""

    exit_code = 5
