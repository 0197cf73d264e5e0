"""Which known mistake a failed check's answers show, for the report to name it.

The check is replayed, with the student's recorded answers and no call into their process, once for each of the
question's known-wrong variants with the variant in place of the reference (``@substitutable``). A variant is the
likely cause only when it reproduces the failure on the failing inputs:

- the replay passes the check; or
- the replay meets the very expectation that failed (the same one in the sequence the check tried, at the same place
  in the check's code, so the student's answer there equals the variant's within the check's tolerance), having
  met every one before it, and then passes or asks for an answer the graded run never got (it stopped at the
  failure: ``ReplayExhausted``).

- or the failure was on the shape of an answer that is the expected shape with axes of size 1 added or removed (the
  same entries in the same order), which the check then compared as the expected shape (shapes.py): the replay fails at
  that very expectation too, and there the answer so read equals the variant's, while it differs from the
  reference's. A shape error then does not hide the mistake its values show.

A replay that fails anywhere else (before, at or after that expectation) or raises disagrees with the student, and
so does one that stops short of the expectation that failed. A failure that was not an expectation (a check raising
``WrongAnswer`` itself, or the student's code raising, which the replay serves again under every variant) has a cause
only when a replay passes. Its name and explanation are then the diagnosis; without one, no cause is given, and the
check's own message says what differed. A check that names the mistake itself (``ctx.expect(...,
misconception=...)``) needs no replay: the runner takes that name.
"""

from __future__ import annotations

from grader.check.context import CheckContext
from grader.check.spec import Assignment, CheckSpec
from grader.check.student import ReplayedCode, ReplayExhausted, StudentCode
from grader.check.variants import substituted
from grader.errors import WrongAnswer
from grader.results import Diagnosis


def reproduces(replay: CheckContext, failed: CheckContext) -> bool:
    """Whether a replay that stopped for want of recorded answers met the expectation at which ``failed`` failed,
    tried at the same place, after the same ones before it."""
    at = failed.failed_at
    if at is None or replay.failed_at is not None or len(replay.points) <= at:
        return False
    return replay.points[:at + 1] == failed.points[:at + 1]


def reproduces_as_read(replay: CheckContext, failed: CheckContext) -> bool:
    """Whether a replay that failed, as ``failed`` did, on the shape of an answer read in the expected shape (axes
    of size 1 added or removed, and nothing else), failed at the same expectation, and found the answer so read to be
    the variant's, where the graded run found it not to be the reference's."""
    at = failed.failed_at
    return (at is not None and replay.failed_at == at and replay.points[:at + 1] == failed.points[:at + 1]
            and failed.read.get(at) is False and replay.read.get(at) is True)


def diagnose(assignment: Assignment, check: CheckSpec, seed: int, code: StudentCode,
             failed: CheckContext) -> Diagnosis | None:
    """The first known-wrong variant of this question that reproduces the student's failure (module docstring):
    the check replayed with the variant in place of the reference passes, or meets the expectation that failed
    and runs out of recorded answers after it."""
    for variant in assignment.variants_for(check.question):
        if variant.replaces is None:
            continue
        replay = CheckContext(student=ReplayedCode(code), seed=seed)
        try:
            with substituted(variant):
                check.run(replay)
        except ReplayExhausted:
            if not reproduces(replay, failed):
                continue
        except WrongAnswer:
            if not reproduces_as_read(replay, failed):
                continue
        except Exception:  # a variant that disagrees, or cannot run on these inputs
            continue
        return Diagnosis(variant.id, variant.name, variant.explanation)
    return None
