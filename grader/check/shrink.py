"""The smallest failing case: a check that fails on values, run again with smaller sizes.

A check that draws its sizes with ``ctx.sizes`` and fails on values is run again in the same fork with smaller
sizes forced, to find the smallest input that still fails the same way (``SmallestCase``), for the student to
reproduce by hand. The search is greedy and bounded (``SHRINK_ATTEMPTS`` runs, ``SHRINK_SECONDS``), deterministic
(every run is seeded with the check's seed), and never changes the score; a run that hangs or crashes ends it, and
the next check gets a fresh process as after any crashed check.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from grader.check.context import CheckContext
from grader.check.spec import CheckSpec
from grader.check.student import StudentCode
from grader.errors import CallTimedOut, ConfigurationError, ProcessDied, WrongAnswer
from grader.results import PUBLIC, SmallestCase

SHRINK_ATTEMPTS = 40  # smaller runs of one failing check, at most
SHRINK_SECONDS = 5.0  # and the time they may take together


def smallest_case(check: CheckSpec, seed: int, code: StudentCode, failed: CheckContext, *, deadline: float,
                  lost: Callable[[], None]) -> tuple[SmallestCase | None, str | None]:
    """The smallest sizes at which the check still fails at the same expectation: greedy, one size at a time (its
    low, then half, then one step less, on its steps: ``candidates``), again until nothing shrinks; None when no
    smaller size fails. And a note for the check when the code hung or crashed at a smaller size, which ends the
    search, and the process: ``lost`` is called then. The search stops at ``deadline`` (the submission's) if not
    before."""
    public = check.visibility == PUBLIC
    best = dict(failed.drawn)
    found: tuple[CheckContext, WrongAnswer] | None = None
    tried: set[tuple[tuple[str, int], ...]] = set()
    stop = min(time.monotonic() + SHRINK_SECONDS, deadline)
    shrinking = True
    while shrinking:
        shrinking = False
        for name in list(best):
            for size in candidates(best[name], failed.minimum.get(name, 1), failed.steps.get(name, 1)):
                trial = {**best, name: size}
                if size >= best[name] or tuple(trial.items()) in tried:
                    continue
                if len(tried) >= SHRINK_ATTEMPTS or time.monotonic() >= stop:
                    return _smallest(found, failed, public, len(tried)), None
                tried.add(tuple(trial.items()))
                try:
                    run, failure = run_at_sizes(check, seed, code, trial)
                except (CallTimedOut, ProcessDied) as exc:
                    lost()  # the process is gone: the next check starts the submission again
                    what = "ran past its time limit" if isinstance(exc, CallTimedOut) else "ended the process"
                    # A hidden check's sizes as graded stay hidden: the trial keeps all but one of them.
                    where = f"at {SmallestCase.describe(tuple(trial.items()))}" if public else "on smaller inputs"
                    note = f"Looking for a smaller failing case, your code {what} {where}, so the search stopped."
                    return _smallest(found, failed, public, len(tried)), note
                if failure is not None and failure.values and run.met == failed.met \
                        and run.drawn.get(name, size) < best[name]:
                    best, found, shrinking = dict(run.drawn), (run, failure), True
                    break
    return _smallest(found, failed, public, len(tried)), None


def candidates(size: int, floor: int, step: int = 1) -> list[int]:
    """The smaller sizes to try in place of ``size``, smallest first: the floor, about half, and one step less, each
    on the size's steps (``floor + k * step``: a size drawn as (2, 33, 2) is never tried odd) and at least the
    floor."""
    wanted = {floor, size // 2, size - step}
    return sorted({floor + (value - floor) // step * step for value in wanted if value >= floor} - {size})


def run_again(run: CheckContext, check: CheckSpec, seed: int, code: StudentCode) -> None:
    """``check`` run again in ``run``, seeded as when graded; raises what it raises (a WrongAnswer once the
    replies the code still owes are read, so that the next run starts clean)."""
    code.seed(seed)
    try:
        check.run(run)
    except WrongAnswer:
        code.settle(ignore_errors=True)
        raise
    code.settle()


def run_at_sizes(check: CheckSpec, seed: int, code: StudentCode,
                 sizes: Mapping[str, int]) -> tuple[CheckContext, WrongAnswer | None]:
    """The check run again, seeded as before, with ``sizes`` forced on its ``ctx.sizes``: its context, and the wrong
    answer it found, if it found one. A hang or a crash raises (CallTimedOut, ProcessDied)."""
    run = CheckContext(student=code, seed=seed, forced=sizes)
    try:
        run_again(run, check, seed, code)
    except WrongAnswer as exc:
        return run, exc
    except (CallTimedOut, ProcessDied, ConfigurationError):
        raise
    except Exception:  # the code raised at these sizes, or the check cannot run on them: not the same failure
        return run, None
    return run, None


def _smallest(found: tuple[CheckContext, WrongAnswer] | None, failed: CheckContext, public: bool,
              attempts: int) -> SmallestCase | None:
    if found is None:
        return None
    run, failure = found
    diff = run.diff or next((table for table in run.tables if table.bad), None)
    return SmallestCase(tuple(run.drawn.items()), tuple(failed.drawn.items()),
                        failure.message if public else failure.hint, failure.message, run.trace, diff, attempts)
