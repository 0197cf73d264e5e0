"""How an assignment is declared in ``solutions/<name>/checks.py``: questions, written answers and checks."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.check.binding import Naming
from grader.check.provided import ProvidedFile
from grader.check.variants import Variant
from grader.errors import ConfigurationError
from grader.execute.limits import Limits
from grader.results import HIDDEN, PUBLIC
from grader.times import LatePolicy, parse_time

if TYPE_CHECKING:
    from grader.check.context import CheckContext
    from grader.execute.workers import WarmUp

CheckFunction = Callable[["CheckContext"], None]


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    defines: tuple[str, ...] = ()  # the names students write for this question
    # Names replaced by the reference (from the assignment's provided file) while this question is graded, so a
    # mistake in the question that defines them is not penalised twice.
    graded_with_reference: tuple[str, ...] = ()
    # Names from the provided code that this question's checks call but students do not write (a training
    # harness), put in the student's namespace while the question is graded.
    uses_provided: tuple[str, ...] = ()
    # How the weights the checks set find the student's parameters (grader/check/binding.py): by the specified
    # names only (strict_names), or also up to case, by these aliases of a name's parts, and by structure.
    strict_names: bool = False
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The shapes the checks pass, in words, told when the student's code fails on them with a shape error:
    # "the assignment passes one query of shape (1, input_dim) ...".
    convention: str = ""
    # The parameters the checks call each name of ``defines`` with, in the order they pass them (a class: its
    # forward's, less self): {"masked_softmax": ("X", "valid_lens")}. The loader reads those not given here from the
    # template, solution.ipynb; a student's parameters in another order are named when a check fails (call_order.py).
    calls: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def naming(self) -> Naming:
        return Naming(self.strict_names, dict(self.aliases))

    @property
    def provided_names(self) -> tuple[str, ...]:
        return (*self.graded_with_reference, *self.uses_provided)


@dataclass(frozen=True)
class RubricItem:
    """One line of a written question's rubric: applying it to an answer adds ``points`` (negative: deducts) and
    shows the student its title and ``comment``. The review app (`grader review`) starts from these and lets the
    markers edit them."""

    title: str
    points: float
    comment: str = ""


@dataclass(frozen=True)
class WrittenQuestion:
    """A question answered in words, marked by hand: in the browser (`grader review`) or in OUT/manual.csv."""

    id: str
    prompt: str
    points: float = 0.0  # 0: read and commented on, not marked; otherwise part of the assignment's total
    rubric: tuple[RubricItem, ...] = ()
    about: str = ""  # the id of the question whose attention maps the answer discusses: shown beside it to mark


@dataclass(frozen=True)
class CheckSpec:
    id: str
    question: str
    title: str
    points: float
    visibility: str
    run: CheckFunction = field(compare=False)
    # Graded with the reference of the earlier answers only, never again with the student's own: the check is about
    # what the earlier answer does, which a wrong one of the student's could change (docs/writing-checks.md).
    reference_only: bool = False


class Assignment:
    """An assignment's questions and checks. Checks register with the ``check`` decorator."""

    def __init__(self, *, name: str, title: str, questions: Sequence[Question],
                 written: Sequence[WrittenQuestion] = (), provided: str | Path | Sequence[str | Path] = (),
                 limits: Limits | None = None, stubbed_modules: Mapping[str, str] | None = None,
                 deadline: str | datetime | None = None, late: LatePolicy | None = None,
                 version: str = "1") -> None:
        self.name = name
        self.title = title
        # Bumped by the instructor when the assignment changes in a way students should notice; a student kit shows
        # it beside a digest of what it holds (grader/kit/identity.py).
        self.version = version
        self.questions = tuple(questions)
        self.written = tuple(written)
        # Files (relative to the solutions folder, or absolute) whose names questions may provide: run in the
        # student's process, so they hold only what students may see.
        self.provided = (provided,) if isinstance(provided, (str, Path)) else tuple(provided)
        self.limits = limits or Limits()
        # Modules a submission imports around its answers that the grader replaces with no-op stand-ins while
        # loading it (say, a training harness the grader runs itself), each with the note the student reads.
        self.stubbed_modules = dict(stubbed_modules or {})
        # When work is due (ISO 8601 with its offset, or a date, time and zone name) and what being late costs
        # (grader/times.py); a run may override both (grader grade --deadline ...).
        if isinstance(deadline, datetime) and deadline.tzinfo is None:
            raise ConfigurationError(f"{name}: the deadline {deadline} has no time zone (give it a tzinfo)")
        self.deadline = parse_time(deadline, what=f"{name}: deadline") if isinstance(deadline, str) else deadline
        self.late = late or LatePolicy()
        self.checks: list[CheckSpec] = []
        self.variants: list[Variant] = []  # known-wrong versions of the references (grader/check/variants.py)
        self.folder: Path | None = None  # set by the loader
        self.seed_key = b""  # the course's secret for hidden checks' seeds (grader/check/seeds.py): the loader's

    def check(self, question: str, *, points: float, visibility: str = PUBLIC, title: str | None = None,
              reference_only: bool = False) -> Callable[[CheckFunction], CheckFunction]:
        if visibility not in (PUBLIC, HIDDEN):
            raise ConfigurationError(f"visibility must be {PUBLIC!r} or {HIDDEN!r}, not {visibility!r}")

        def register(function: CheckFunction) -> CheckFunction:
            # `def q2_random_1d` registers check "q2.random_1d": unique Python names, short ids.
            name = function.__name__.removeprefix(f"{question}_")
            doc = inspect.getdoc(function) or name.replace("_", " ")
            self.checks.append(CheckSpec(f"{question}.{name}", question, title or doc.splitlines()[0],
                                         float(points), visibility, function, reference_only))
            return function

        return register

    def variant(self, question: str, *, replaces: Callable[..., Any], name: str, explain: str,
                mutation: Sequence[tuple[str, str]] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a known-wrong version of the reference function ``replaces`` (marked ``@substitutable``):
        ``name`` for the dashboard, ``explain`` for the student (what their code does, and the fix), ``mutation``
        the source edits that put this mistake into the model solution for the mutation test."""

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            variant_id = f"{question}.{function.__name__.removeprefix(f'{question}_')}"
            self.variants.append(Variant(variant_id, question, name, explain, replaces, function, tuple(mutation)))
            return function

        return register

    def misconception(self, question: str, key: str, *, name: str, explain: str,
                      mutation: Sequence[tuple[str, str]] = ()) -> str:
        """Register a known mistake that checks name themselves (``ctx.expect(..., misconception=id)``) rather than
        one a replay with a variant finds; returns its id, ``question.key``."""
        variant_id = f"{question}.{key}"
        self.variants.append(Variant(variant_id, question, name, explain, None, None, tuple(mutation)))
        return variant_id

    def variant_named(self, variant_id: str) -> Variant:
        found = [v for v in self.variants if v.id == variant_id]
        if not found:
            raise ConfigurationError(f"{self.name}: a check names misconception {variant_id!r}, which no variant has")
        return found[0]

    def variants_for(self, question_id: str) -> list[Variant]:
        return [v for v in self.variants if v.question == question_id]

    def checks_for(self, question_id: str) -> list[CheckSpec]:
        return [c for c in self.checks if c.question == question_id]

    def owner_of(self, name: str) -> Question | None:
        return next((q for q in self.questions if name in q.defines), None)

    @property
    def provided_paths(self) -> tuple[Path, ...]:
        if self.folder is None:
            return ()
        return tuple((self.folder / path).resolve() for path in self.provided)

    @functools.cached_property
    def provided_files(self) -> tuple[ProvidedFile, ...]:
        """The provided files, read once per run (the loader sets ``folder`` first), each compiled in the student's
        process under its own filename, so a traceback names the file and its own line numbers."""
        names = set(self.withheld_names)
        return tuple(ProvidedFile.read(path, names) for path in self.provided_paths)

    @property
    def trains(self) -> bool:
        """A question calls provided code (a training harness): the student's processes are made ready to train."""
        return any(q.uses_provided for q in self.questions)

    @property
    def warm_up(self) -> WarmUp:
        """What a worker's zygote pays once for every student process it forks: nothing more for an assignment
        that trains nothing; a model's first forward and backward pass for one that does; and torch's compiler,
        imported by the first optimiser torch makes (0.8 s), only where a provided harness makes one."""
        if not self.trains:
            return ""
        return "optimizer" if any(f.makes_torch_optimizer for f in self.provided_files) else "training"

    @property
    def max_score(self) -> float:
        """The checks' points and the written questions' (marked by hand)."""
        return sum(c.points for c in self.checks) + sum(w.points for w in self.written)

    @property
    def calls(self) -> dict[str, tuple[str, ...]]:
        """The parameters each answer is called with, in order (``Question.calls``), whichever question's checks call
        it (keras_additive_attention's q2 calls q1's class)."""
        return {name: parameters for q in self.questions for name, parameters in q.calls.items()}

    @property
    def withheld_names(self) -> tuple[str, ...]:
        return tuple(name for q in self.questions for name in q.defines)

    @property
    def answered_by(self) -> dict[str, str]:
        """Each name a question asks students to write -> that question's id: what the sandbox's ``d2l`` withholds,
        and what a submission that takes it from ``d2l`` is told ("`d2l.X` is the answer to q3")."""
        return {name: q.id for q in self.questions for name in q.defines}

    def authoring_warnings(self) -> list[str]:
        """What is allowed but almost surely not meant: a rubric that can never count, or whose items cannot add up
        to the question's points (grading goes on; the commands that load an assignment print these)."""
        found = []
        for written in self.written:
            if not written.rubric:
                continue
            full = sum(item.points for item in written.rubric if item.points > 0)
            if written.points == 0:
                found.append(f"{self.name}: written question {written.id} has a rubric but is worth 0 points, so its "
                             "marks never count: give it points=..., or drop the rubric")
            elif abs(full - written.points) > 1e-9:
                found.append(f"{self.name}: written question {written.id} is worth {written.points:g} points, but its "
                             f"rubric's items add up to {full:g}: make them add up to {written.points:g}, or markers "
                             f"can {'never give full marks' if full < written.points else 'give more than full marks'}"
                             " from the rubric")
        return found

    def validate(self) -> None:
        ids = [c.id for c in self.checks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ConfigurationError(f"{self.name}: duplicate check ids {duplicates}")
        question_ids = {q.id for q in self.questions}
        for variant in self.variants:
            if variant.question not in question_ids:
                raise ConfigurationError(f"{self.name}: variant {variant.id} names unknown question {variant.question}")
            if variant.replaces is not None and not hasattr(variant.replaces, "__wrapped__"):
                raise ConfigurationError(f"{self.name}: variant {variant.id} replaces a function not marked "
                                         "@substitutable")
        variant_ids = [v.id for v in self.variants]
        if len(set(variant_ids)) != len(variant_ids):
            raise ConfigurationError(f"{self.name}: duplicate variant ids")
        written_ids = [w.id for w in self.written]
        clashes = sorted({i for i in written_ids if written_ids.count(i) > 1 or i in question_ids})
        if clashes:
            raise ConfigurationError(f"{self.name}: written question ids {clashes} are repeated or name a question")
        for written in self.written:
            if not written.points >= 0:
                raise ConfigurationError(f"{self.name}: written question {written.id} must be worth 0 points or more")
        for check in self.checks:
            if check.question not in question_ids:
                raise ConfigurationError(f"{self.name}: check {check.id} names unknown question {check.question}")
            if check.points <= 0:
                raise ConfigurationError(f"{self.name}: check {check.id} must be worth more than 0 points")
        for question in self.questions:
            if not self.checks_for(question.id):
                raise ConfigurationError(f"{self.name}: question {question.id} has no checks")
            for name in question.graded_with_reference:
                if self.owner_of(name) is None:
                    raise ConfigurationError(f"{self.name}: {question.id} is graded with the reference {name}, "
                                             "but no question defines it")
            for name in question.uses_provided:
                if self.owner_of(name) is not None:
                    raise ConfigurationError(f"{self.name}: {question.id} uses the provided {name}, but students "
                                             "write it")
            if question.provided_names and not self.provided:
                raise ConfigurationError(f"{self.name}: {question.id} needs a provided file for "
                                         f"{', '.join(question.provided_names)}")
        for path in self.provided_paths:
            if not path.is_file():
                raise ConfigurationError(f"{self.name}: the provided file {path} does not exist")
