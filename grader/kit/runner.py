"""A kit's public checks run on the student's namespace in their own kernel, by the grader's own runner.

The runner (grader/check/runner.py) does what it does in the grader: the same checks, seeds, comparisons, messages,
diagnoses and heatmaps. What differs is where the student's code runs (here, in the kernel: no process to start or
restart), how the references a question is graded with answer (from what they answered the model solution,
grader/kit/standins.py: they are other questions' answers, which a kit must not hold), and the checks only the
grader's process can run.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import random
import sys
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from grader.check.context import CheckContext
from grader.check.runner import SubmissionRunner, _QuestionRun
from grader.check.spec import Assignment, CheckSpec, Question
from grader.check.student import CachedSources, StudentCode
from grader.check.variants import Variant
from grader.errors import ConfigurationError
from grader.execute.limits import Limits
from grader.kit.bundle import ARRAYS, FORMAT, KIT_FILE, KIT_FOLDER, ArrayStore, read_json
from grader.kit.identity import KitIdentity, installed_published, installed_wheel, wheel_note
from grader.kit.oracle import Oracle, VariantMark, answering, replaced
from grader.kit.progress import still_running
from grader.kit.session import KernelCalls, KernelSession
from grader.kit.standins import StandIns
from grader.results import GRADED, PUBLIC, SubmissionResult


@dataclass
class Kit:
    folder: Path  # grader-kit/
    name: str
    title: str
    student: str
    assignment: Assignment
    unchecked: tuple[tuple[str, str], ...]
    has_hidden: bool
    grader_only: dict[str, str]  # check id -> why only the grader runs it (left out of the kit's result)
    provided: tuple[tuple[str, str], ...]  # (file name, source) of the harness files questions use
    standins: dict[str, StandIns]  # question -> the recorded answers of the references it is graded with
    limits: Limits = dataclasses.field(default_factory=Limits)  # its call_seconds: the kernel applies it too
    identity: KitIdentity | None = None  # which build (None: a kit made in memory, by a test)
    out_of: float = 0.0  # the grade's whole: every check's points, hidden ones too, and the written answers'


def find_kit(start: Path | None = None) -> Path:
    """The ``grader-kit`` folder in ``start`` (the working directory) or the nearest folder above it."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / KIT_FOLDER / KIT_FILE).is_file():
            return folder / KIT_FOLDER
    raise ConfigurationError(f"no {KIT_FOLDER}/{KIT_FILE} in {here} or a folder above it: open the notebook from "
                             "the folder of the kit your instructor gave you, or pass check(kit='path/to/kit')")


def _checks_module(folder: Path, name: str, relative: list[list[str]], oracle: Oracle) -> types.ModuleType:
    package = f"_grader_kit_{name}"
    root = types.ModuleType(package)
    root.__path__ = []
    sys.modules[package] = root
    for module, _, _ in relative:
        recorded = oracle.module(module)
        sys.modules[f"{package}.{module}"] = recorded
        setattr(root, module, recorded)
    checks = types.ModuleType(f"{package}.checks")
    checks.__package__ = package
    checks.__file__ = str(folder / "checks.py")
    sys.modules[checks.__name__] = checks
    source = (folder / "checks.py").read_text(encoding="utf-8")
    exec(compile(source, checks.__file__, "exec"), checks.__dict__)
    return checks


def _answered(check_id: str, function: Any, calls: list[dict[str, Any]]) -> Any:
    def run(ctx: CheckContext) -> None:
        with answering(check_id, calls):
            function(ctx)

    return run


def load_kit(folder: Path) -> Kit:
    data = read_json(folder / KIT_FILE)
    if data.get("format") != FORMAT:  # never an older grader: an older kit is fetched anew
        older = isinstance(data.get("format"), int) and data["format"] < FORMAT
        raise ConfigurationError(f"{folder / KIT_FILE} is a kit of format {data.get('format')}, this grader reads "
                                 f"format {FORMAT}: " + (f"fetch the new {data.get('assignment')} kit from your course"
                                                         if older else "install the wheel from this kit's folder"))
    store = ArrayStore(folder / ARRAYS)
    oracle = Oracle(store, data["constants"])
    module = _checks_module(folder, data["assignment"], data["relative_imports"], oracle)
    questions = [Question(q["id"], q["title"], defines=tuple(q["defines"]),
                          graded_with_reference=tuple(q["graded_with_reference"]),
                          uses_provided=tuple(q["uses_provided"]), strict_names=q["strict_names"],
                          aliases={k: tuple(v) for k, v in q["aliases"].items()}, convention=q["convention"],
                          calls={k: tuple(v) for k, v in q.get("calls", {}).items()})
                 for q in data["questions"]]
    assignment = Assignment(name=data["assignment"], title=data["title"], questions=questions, limits=Limits())
    assignment.checks = [CheckSpec(c["id"], c["question"], c["title"], float(c["points"]), PUBLIC,
                                   _answered(c["id"], getattr(module, c["function"]), data["calls"].get(c["id"], [])),
                                   bool(c.get("reference_only", False)))
                         for c in data["checks"]]
    assignment.variants = [Variant(v["id"], v["question"], v["name"], v["explanation"],
                                   replaced if v["computed"] else None, VariantMark(v["id"]) if v["computed"] else None)
                           for v in data["variants"]]
    provided = tuple((Path(p).name, (folder / p).read_text(encoding="utf-8")) for p in data["provided"])
    standins = {question: StandIns(records, store) for question, records in data["provided_calls"].items()}
    return Kit(folder, data["assignment"], data["title"], data["student"], assignment,
               tuple((q, t) for q, t in data["unchecked"]), bool(data["has_hidden"]),
               {c["id"]: c["grader_only"] for c in data["checks"] if c["grader_only"]}, provided, standins,
               Limits(call_seconds=float(data["call_seconds"])), KitIdentity.from_json(data["identity"]),
               float(data.get("out_of", 0.0)))


def kit_notes(kit: Kit, questions: Sequence[str] = ()) -> tuple[str, ...]:
    """What the kit leaves to the grader, one line per check, for the report; first, when the installed grader is
    older than the kit needs or was published with a newer kit of its assignment, that."""
    wheel = wheel_note(kit.identity, installed_wheel(), installed_published()) if kit.identity else ""
    return (*((wheel,) if wheel else ()),
            *(f"Checked when graded, not here: {c.question} \"{c.title}\" ({kit.grader_only[c.id]})."
              for c in kit.assignment.checks if c.id in kit.grader_only and (not questions or c.question in questions)))


_LOADED: dict[Path, tuple[float, Kit]] = {}


def cached_kit(folder: Path) -> Kit:
    """The kit, read once per kernel (again when its kit.json changes)."""
    folder = folder.resolve()
    stamp = (folder / KIT_FILE).stat().st_mtime
    if folder not in _LOADED or _LOADED[folder][0] != stamp:
        _LOADED[folder] = (stamp, load_kit(folder))
    return _LOADED[folder][1]


@contextlib.contextmanager
def _generators_kept() -> Iterator[None]:
    """The checks seed torch, NumPy and random as the grader does; the student's own state comes back after."""
    import torch

    saved = torch.get_rng_state(), np.random.get_state(), random.getstate()
    try:
        yield
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])


@contextlib.contextmanager
def _names_lent(namespace: dict[str, Any], lent: dict[str, Any]) -> Iterator[None]:
    missing = object()
    saved = {name: namespace.get(name, missing) for name in lent}
    namespace.update(lent)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value


class KitRunner(SubmissionRunner):
    def __init__(self, kit: Kit, namespace: dict[str, Any], assignment: Assignment) -> None:
        super().__init__(assignment=assignment, student=kit.student, program=None,  # type: ignore[arg-type]
                         limits=kit.limits)
        self.kit = kit
        self.calls = KernelCalls(namespace)
        self.screen = sys.stdout  # the student's, before a check's own output is captured
        self._harness: dict[str, Any] | None = None

    def close(self) -> None:
        """Nothing to close: the student's code runs in their kernel."""

    def _shrink(self, check: CheckSpec, seed: int, code: StudentCode, failed: CheckContext) -> tuple[None, None]:
        return None, None  # smaller inputs than the bundle's have no recorded answer

    def _owners(self, question: Question) -> list[str]:
        """As the grader's, from all of the kit's questions (check("q2") runs q2 alone, and q1 still defines
        masked_softmax: not checked now, so not known to be right)."""
        return sorted({q.id for n in question.graded_with_reference if (q := self.kit.assignment.owner_of(n))})

    def harness(self, names: Sequence[str]) -> dict[str, Any]:
        """The provided names a question uses (a training harness), run once per check() from the kit's copy."""
        if self._harness is None:
            # A module of its own (dataclasses look their class's module up), as the grader's process runs it.
            module = types.ModuleType(f"_grader_kit_{self.kit.name}.provided")
            sys.modules[module.__name__] = module
            for filename, source in self.kit.provided:
                exec(compile(source, str(self.kit.folder / "provided" / filename), "exec"), module.__dict__)
            self._harness = module.__dict__
        return {name: self._harness[name] for name in names}

    def _run_question(self, question: Question, checks: Sequence[CheckSpec], provided: Sequence[str], *,
                      restart: bool = True, last: bool = False) -> _QuestionRun:
        run = _QuestionRun()
        out, err = io.StringIO(), io.StringIO()
        lent = self.harness(question.uses_provided) if question.uses_provided else {}
        by_reference = [n for n in question.graded_with_reference if n in provided]
        if by_reference:  # the grader's first run: the references in place of the student's own answers
            recorded = self.kit.standins.get(question.id, StandIns([], ArrayStore(self.kit.folder / ARRAYS)))
            lent |= recorded.lend(by_reference, self.calls.namespace)
        with _names_lent(self.calls.namespace, lent), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = StudentCode(KernelSession(self.calls, self.kit.limits), naming=question.naming,  # type: ignore[arg-type]
                               convention=question.convention, asked=self.kit.assignment.withheld_names,
                               answered_by=self.kit.assignment.answered_by, calls=self.kit.assignment.calls,
                               sources=CachedSources())
            for check in checks:
                with still_running(f'{check.question} "{check.title}"', self.screen):
                    run.checks.append(self._run_check(check, code, shrink=False))
            run.notes += [note for note in code.notes if note not in run.notes]
            run.choices += code.choices
            code.settle(ignore_errors=True)
        run.stdout, run.stderr = out.getvalue(), err.getvalue()
        return run


def run_kit(kit: Kit, namespace: dict[str, Any], questions: Sequence[str] = ()) -> SubmissionResult:
    """The kit's public checks (of ``questions``, or all) on the names in ``namespace``."""
    assignment = _only(kit.assignment, [q.id for q in kit.assignment.questions])
    assignment.checks = [c for c in assignment.checks if c.id not in kit.grader_only]  # said in the report's notes
    if questions:
        unknown = sorted(set(questions) - {q.id for q in assignment.questions} - {q for q, _ in kit.unchecked})
        if unknown:
            known = ", ".join(q.id for q in assignment.questions)
            raise ConfigurationError(f"{kit.name} has no question {', '.join(unknown)} (its questions: {known})")
        assignment = _only(assignment, questions)
    started = time.monotonic()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with _generators_kept():
        graded = KitRunner(kit, namespace, assignment).grade()
    return SubmissionResult(student=kit.student, assignment=kit.name, source="your notebook", kind="notebook",
                            sha256="", status=GRADED, reason="", questions=tuple(graded), units=(), answers=(),
                            notes=(), submitted_at=now, graded_at=now, duration_s=time.monotonic() - started)


def _only(assignment: Assignment, questions: Sequence[str]) -> Assignment:
    chosen = copy.copy(assignment)
    chosen.questions = tuple(q for q in assignment.questions if q.id in questions)
    chosen.checks = [c for c in assignment.checks if c.question in questions]
    return chosen


