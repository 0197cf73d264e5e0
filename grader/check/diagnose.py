"""Which known mistake a failed check's answers show, for the report to name it.

The check is replayed, with the student's recorded answers and no call into their process, once for each of the
question's known-wrong variants with the variant in place of the reference (``@substitutable``). A variant whose
replay gets further than the graded run, or passes, agrees with the student where the check failed: its name and
explanation are the diagnosis. A check that names the mistake itself (``ctx.expect(..., misconception=...)``) needs
no replay: the runner takes that name.
"""

from __future__ import annotations

from grader.check.context import CheckContext
from grader.check.spec import Assignment, CheckSpec
from grader.check.student import ReplayedCode, ReplayExhausted, StudentCode
from grader.check.variants import substituted
from grader.results import Diagnosis


def diagnose(assignment: Assignment, check: CheckSpec, seed: int, code: StudentCode,
             failed: CheckContext) -> Diagnosis | None:
    """The first known-wrong variant of this question whose answers agree with the student's where the check
    failed: the check replayed with the variant in place of the reference gets further, or passes."""
    for variant in assignment.variants_for(check.question):
        if variant.replaces is None:
            continue
        replay = CheckContext(student=ReplayedCode(code), seed=seed)
        try:
            with substituted(variant):
                check.run(replay)
        except ReplayExhausted:
            if replay.met <= failed.met:
                continue
        except Exception:  # a variant that disagrees, or cannot run on these inputs
            continue
        return Diagnosis(variant.id, variant.name, variant.explanation)
    return None
