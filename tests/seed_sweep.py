"""One submission's checks as many students would get them: the real runner, sandbox and student process, each check
run once per student id in the same fork of the loaded submission (a class run loads it once per student instead).

Every check draws its random cases from the seed of (assignment, student, check), so this is what shows that a
known-wrong submission fails the same checks whoever hands it in. Nothing is shrunk (the search for a smaller case
never changes a score), and a question graded with a reference is not run again with the student's own code (the
dependency rule's choice between the two is tests/test_consistent_conventions.py's). A check is run once per
distinct seed: a check's run is a function of the program and its seed alone (``CheckContext(student=code,
seed=seed)``), and a public check's seed is everyone's, so running it again for another student id would repeat the
same computation.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path

from grader.check.runner import SubmissionRunner
from grader.check.spec import Assignment, CheckSpec, Question
from grader.check.student import StudentCode
from grader.discover import read_program
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.results import CRASHED, TIMEOUT, CheckResult, Choice, QuestionResult


class SeedSweep(SubmissionRunner):
    def __init__(self, *, students: Sequence[str], **kwargs: object) -> None:
        super().__init__(student=students[0], **kwargs)  # type: ignore[arg-type]
        self.students = tuple(students)
        self.statuses: dict[str, dict[str, str]] = {student: {} for student in self.students}

    def _run_check(self, check: CheckSpec, code: StudentCode, *, shrink: bool = True) -> CheckResult:
        first: CheckResult | None = None
        by_seed: dict[int, str] = {}
        for student in self.students:
            self.student = student
            seed = self._seed(check)
            if seed in by_seed:
                self.statuses[student][check.id] = by_seed[seed]
                continue
            result = super()._run_check(check, code, shrink=False)
            self.statuses[student][check.id] = by_seed[seed] = result.status
            first = first or result
            if result.status in (TIMEOUT, CRASHED):
                break  # the process is gone: the students after this one have no status, which shows
        self.student = self.students[0]
        assert first is not None
        return first

    def _with_own_answers(self, question: Question, checks: list[CheckResult], done: dict[str, QuestionResult], *,
                          last: bool) -> tuple[list[CheckResult], list[str], list[Choice]]:
        return checks, [], []  # a run with the student's own answers would record its statuses over these

    def failing(self) -> dict[str, frozenset[str]]:
        """Each student's failing checks."""
        return {student: frozenset(c for c, status in statuses.items() if status != "passed")
                for student, statuses in self.statuses.items()}


def sweep(assignment: Assignment, path: Path, students: Sequence[str], worker: Worker,
          keep: Callable[[CheckSpec], bool] = lambda check: True) -> SeedSweep:
    """The submission at ``path`` graded for every student in ``students`` on the checks ``keep`` keeps."""
    kept = copy.copy(assignment)
    kept.checks = [c for c in assignment.checks if keep(c)]
    program = read_program(path.read_bytes(), kind="python" if path.suffix == ".py" else "notebook", name=path.name,
                           written_ids=[w.id for w in assignment.written])
    runner = SeedSweep(students=students, assignment=kept, program=program, limits=assignment.limits,
                       sandbox=worker.sandbox, worker=worker)
    try:
        runner.load()
        runner.grade()
    finally:
        runner.close()
    return runner


def new_worker(assignment: Assignment) -> Worker:
    return Worker(sandbox=isolation.detect(), device="cpu", limits=assignment.limits)
