"""Build an assignment's student kit: the templates, the public checks' code and the bundle of what the references
(and the known-wrong variants) return on the public checks' inputs.

The bundle is recorded by grading the solution notebook with the public checks, in the grader's sandbox (a public
check's random case is everyone's, so it is the one the kit draws): each call a public check makes to a reference is
kept with its arguments and result, and then made again with each variant of its question in place of the reference.
The calls the solution's later questions make to the references they are graded with (q2 calling the reference
masked_softmax) are kept in the sandbox too, with what they returned (grader/kit/standins.py). Nothing of a hidden
check runs, and no reference code is copied: only what the public checks computed with it.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import shutil
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from grader.check.context import CheckContext
from grader.check.load import load_assignment, load_solution_module
from grader.check.runner import RECORDING_PROVIDED
from grader.check.spec import Assignment, CheckSpec
from grader.check.student import ReplayedCode, StudentCode
from grader.check.variants import substituted
from grader.discover.finder import submission_file
from grader.discover.program import top_level_names
from grader.errors import ConfigurationError, WrongAnswer
from grader.execute import isolation
from grader.kit.bundle import ARRAYS, FORMAT, KIT_FILE, KIT_FOLDER, KIT_STUDENT, ArrayStore, encode, write_json
from grader.kit.derive import derive_public_checks
from grader.kit.identity import KitIdentity, kit_digest, sources_digest
from grader.kit.requirements import REQUIREMENTS_FILE, assignment_needs, needs_sentence
from grader.kit.standins import kept_values, pooled
from grader.kit.wheel import KIT_REQUIREMENTS
from grader.paths import ASSIGNMENTS_DIR, PROJECT_ROOT, SOLUTIONS_DIR, STUDENT_GUIDE
from grader.results import GRADED, PUBLIC

DIST_DIR = PROJECT_ROOT / "dist"
GUIDE_EXAMPLE = "attention_scoring"
NEEDS_MARKER = "This assignment's files need nothing else."  # the guide's sentence for the example, rewritten per kit
KIT_GUIDE = "CHECKING.md"
SOLUTION_NOTEBOOK = "solution.ipynb"
CHECKS_MODULE = "checks.py"
PROVIDED = "provided"


@dataclasses.dataclass
class _Call:
    module: str
    attribute: str
    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    returned: Any


_RECORDING: ContextVar[list[_Call] | None] = ContextVar("kit_recording", default=None)
# Checks that give a call a memory budget: a limit the student's kernel cannot take and give back, so the kit leaves
# them to the grader (and holds nothing of them).
GRADER_ONLY = ("it gives your code a memory budget, which only the grader's own process can enforce: it runs when "
               "your work is graded")


class _Recorder(types.ModuleType):
    """Stands for a reference module in the checks while the solution is graded: each call is kept."""

    def __init__(self, name: str, module: types.ModuleType, constants: dict[str, Any]) -> None:
        super().__init__(name)
        self._module, self._constants = module, constants

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._module, attribute)
        if callable(value):
            return _recording(self.__name__, attribute, value)
        self._constants[f"{self.__name__}.{attribute}"] = value
        return value


def _recording(module: str, attribute: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        returned = function(*args, **kwargs)
        calls = _RECORDING.get()
        if calls is not None:
            calls.append(_Call(module, attribute, function, args, dict(kwargs), returned))
        return returned

    return call


@contextmanager
def _recorded_references(checks: types.ModuleType, relative: tuple[tuple[str, str, str], ...], package: str,
                         constants: dict[str, Any]) -> Iterator[None]:
    saved = {bound: checks.__dict__[bound] for _, _, bound in relative}
    try:
        for module, attribute, bound in relative:
            real = __import__(f"{package}.{module}", fromlist=["_"])
            checks.__dict__[bound] = _Recorder(module, real, constants) if not attribute \
                else _recording(module, attribute, getattr(real, attribute))
        yield
    finally:
        checks.__dict__.update(saved)


class _FailingAt(CheckContext):
    """The check replayed on the solution's answers, failing at its ``at``-th expectation: the references a check
    consults only when an answer is wrong (to tell which mistake it is) are then called, and recorded."""

    def __init__(self, *, student: StudentCode, seed: int, at: int) -> None:
        super().__init__(student=student, seed=seed)
        self.at, self.seen = at, 0

    def _fail_here(self) -> None:
        self.seen += 1
        if self.seen - 1 == self.at:
            raise WrongAnswer("failed on purpose", hint="failed on purpose", values=True)

    def expect_tensor(self, *args: Any, **kwargs: Any) -> Any:
        self._fail_here()
        return super().expect_tensor(*args, **kwargs)

    def expect(self, *args: Any, **kwargs: Any) -> None:
        self._fail_here()
        super().expect(*args, **kwargs)


class _RaisingAt(ReplayedCode):
    """The solution's answers replayed, the ``at``-th request answered by an error, as a student's code raising."""

    def __init__(self, original: StudentCode, at: int) -> None:
        super().__init__(original)
        self.at, self.seen = at, 0

    def exchange(self, header: dict[str, Any], blobs: Any, *, what: str, timeout: float | None) -> tuple[dict, list]:
        reply, reply_blobs = super().exchange(header, blobs, what=what, timeout=timeout)
        self.seen += 1
        if self.seen - 1 == self.at:
            return {"ok": False, "error": {"type": "RuntimeError", "message": "raised on purpose"}}, []
        return reply, reply_blobs


def _explore_failures(check: CheckSpec, ctx: CheckContext) -> None:
    """Run the check again on the solution's recorded answers, failing it at each of its expectations and raising at
    each of its requests in turn (any exception is the point, and is dropped)."""
    requests = len(ctx.student.replies)
    for at in range(max(ctx.met, 1) + 1):
        with contextlib.suppress(Exception):
            check.run(_FailingAt(student=ReplayedCode(ctx.student), seed=ctx.seed, at=at))
    for at in range(requests):
        with contextlib.suppress(Exception):
            check.run(CheckContext(student=_RaisingAt(ctx.student, at), seed=ctx.seed))


def _recorded_check(check: CheckSpec, calls: dict[str, list[_Call]], budgeted: set[str],
                    provided: dict[str, list[dict[str, Any]]], answered_by_reference: set[str]) -> CheckSpec:
    def run(ctx: Any) -> None:
        calls[check.id] = []
        token = _RECORDING.set(calls[check.id])
        try:
            check.run(ctx)
            if check.question in answered_by_reference:
                ctx.student.settle(ignore_errors=True)
                reply, blobs = ctx.student.session.request({"op": "provided_calls"})
                provided.setdefault(check.question, []).extend(kept_values(reply.get("kept", []), blobs))
            if not ctx.student.budgeted:  # a budgeted check is left out of the kit: nothing to record its failures for
                _explore_failures(check, ctx)
        finally:
            _RECORDING.reset(token)
            if ctx.student.budgeted:  # a memory budget: only the grader's process enforces it (left out of the kit)
                budgeted.add(check.id)

    return dataclasses.replace(check, run=run)


def _variant_results(call: _Call, assignment: Assignment, question: str, store: ArrayStore) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for variant in assignment.variants_for(question):
        if variant.replaces is None:
            continue
        try:
            with substituted(variant):
                returned = call.function(*call.args, **call.kwargs)
        except Exception as exc:  # the variant cannot compute on these inputs: a replay with it disagrees
            results[variant.id] = {"raised": type(exc).__name__}
            continue
        results[variant.id] = {"returned": encode(returned, store)}
    return results


def _pooled(calls: list[_Call], assignment: Assignment, question: str, store: ArrayStore) -> list[dict[str, Any]]:
    """Each distinct call once (the same function on the same inputs), in the order first made."""
    pooled: dict[str, dict[str, Any]] = {}
    for call in calls:
        entry = {"module": call.module, "attribute": call.attribute, "args": encode(call.args, store),
                 "kwargs": encode(call.kwargs, store)}
        key = json.dumps(entry, sort_keys=True)
        if key not in pooled:
            pooled[key] = {**entry, "returned": encode(call.returned, store),
                           "variants": _variant_results(call, assignment, question, store)}
    return list(pooled.values())


def _provided_files(assignment: Assignment) -> list[Path]:
    """The provided files that define what public questions use but students do not write (a training harness):
    students may have those; a file that also defines an answer (the reference of a question graded with it) is
    never shipped."""
    wanted = {n for q in assignment.questions for n in q.uses_provided}
    answers = set(assignment.withheld_names)
    files = []
    for path in assignment.provided_paths:
        names = top_level_names(ast.parse(path.read_text(encoding="utf-8")))
        if names & wanted:
            if names & answers:
                raise ConfigurationError(f"{assignment.name}: {path.name} defines {sorted(names & wanted)}, which the "
                                         f"kit needs, and answers {sorted(names & answers)}, which it must not hold: "
                                         "put the first in a file of their own")
            files.append(path)
            wanted -= names
    if wanted:
        raise ConfigurationError(f"{assignment.name}: no provided file defines {sorted(wanted)}")
    return files


def _solution(name: str, solutions_dir: Path) -> Any:
    path = solutions_dir / name / SOLUTION_NOTEBOOK
    if not path.is_file():
        raise ConfigurationError(f"{name}: the kit is recorded from {path}, which does not exist")
    return dataclasses.replace(submission_file(path), student=KIT_STUDENT)


def build_kit(name: str, *, solutions_dir: Path = SOLUTIONS_DIR, assignments_dir: Path = ASSIGNMENTS_DIR,
              out_dir: Path = DIST_DIR, sandbox: str = "require") -> Path:
    """Write ``out_dir/name/``: the assignment's student files and ``grader-kit/``; returns the folder."""
    from grader.pipeline.self_check import public_only
    from grader.pipeline.submission_run import grade_submission

    spec = load_assignment(name, solutions_dir=solutions_dir)
    public = public_only(spec)
    hidden = [c for c in spec.checks if c.visibility != PUBLIC]
    checks_path = solutions_dir / name / CHECKS_MODULE
    derived = derive_public_checks(checks_path.read_text(encoding="utf-8"), name=name,
                                   public=[c.run.__name__ for c in public.checks],
                                   hidden=[c.run.__name__ for c in hidden])
    checks_module = load_solution_module(name, "checks", solutions_dir=solutions_dir)
    calls: dict[str, list[_Call]] = {}
    constants: dict[str, Any] = {}
    budgeted: set[str] = set()
    provided_calls: dict[str, list[dict[str, Any]]] = {}
    answered_by_reference = {q.id for q in public.questions if q.graded_with_reference}
    public.checks = [_recorded_check(c, calls, budgeted, provided_calls, answered_by_reference)
                     for c in public.checks]
    solution = _solution(name, solutions_dir)
    recording = RECORDING_PROVIDED.set(True)
    try:
        with _recorded_references(checks_module, derived.relative_imports, checks_module.__package__ or "",
                                  constants):
            result = grade_submission(submission=solution, assignment=public, root=solution.path.parent,
                                      limits=spec.limits, sandbox=isolation.detect(sandbox))
    finally:
        RECORDING_PROVIDED.reset(recording)
    failed = [f"{c.check_id}: {c.message}" for c in result.checks if not c.passed]
    if result.status != GRADED or failed:
        raise ConfigurationError(f"{name}: the solution notebook does not pass its public checks, so the kit cannot "
                                 f"be recorded from it: {'; '.join(failed) or result.reason}")

    kit = out_dir / name
    folder = kit / KIT_FOLDER
    if folder.exists():
        shutil.rmtree(folder)
    store = ArrayStore(folder / ARRAYS)
    recorded_calls = {check.id: _pooled(calls.get(check.id, []), spec, check.question, store)
                      for check in public.checks if check.id not in budgeted}
    provided = _provided_files(public)
    for path in provided:
        target = folder / PROVIDED / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (folder / CHECKS_MODULE).write_text(derived.source, encoding="utf-8")
    asked = {q.id for q in public.questions}
    data = {
        "format": FORMAT,
        "assignment": spec.name,
        "title": spec.title,
        "student": KIT_STUDENT,
        "questions": [{"id": q.id, "title": q.title, "defines": list(q.defines),
                       "graded_with_reference": list(q.graded_with_reference), "uses_provided": list(q.uses_provided),
                       "strict_names": q.strict_names, "aliases": {k: list(v) for k, v in q.aliases.items()},
                       "convention": q.convention, "calls": {k: list(v) for k, v in q.calls.items()}}
                      for q in public.questions],
        "unchecked": [[q.id, q.title] for q in spec.questions if q.id not in asked],
        "has_hidden": bool(hidden),
        "out_of": spec.max_score,  # the grade's whole, as the template's question list says it (not which is hidden)
        "call_seconds": spec.limits.call_seconds,  # the kernel's time limit for a call, as the grader's
        "checks": [{"id": c.id, "question": c.question, "title": c.title, "points": c.points,
                    "function": c.run.__name__, "grader_only": GRADER_ONLY if c.id in budgeted else "",
                    "reference_only": c.reference_only}
                   for c in spec.checks if c.visibility == PUBLIC],
        "variants": [{"id": v.id, "question": v.question, "name": v.name, "explanation": v.explanation,
                      "computed": v.replaces is not None} for v in spec.variants if v.question in asked],
        "provided": [f"{PROVIDED}/{p.name}" for p in provided],
        "relative_imports": [list(r) for r in derived.relative_imports],
        "constants": {k: encode(v, store) for k, v in sorted(constants.items())},
        "calls": recorded_calls,
        "provided_calls": {question: pooled(records, store) for question, records in sorted(provided_calls.items())},
    }
    identity = KitIdentity(spec.name, spec.version, kit_digest(folder, data),
                           sources_digest(solutions_dir / name, assignments_dir / name, spec.provided_paths))
    write_json(folder / KIT_FILE, {**data, "identity": identity.as_json()})
    for path in sorted((assignments_dir / name).iterdir()) if (assignments_dir / name).is_dir() else []:
        if path.is_file():
            shutil.copyfile(path, kit / path.name)
    # What the files a student runs import beyond the checker's own requirements (matplotlib, say): required ones
    # in requirements.txt, for pip; the guide names them all.
    student_files = sorted(p for p in kit.iterdir() if p.suffix in (".py", ".ipynb"))
    needs = assignment_needs(student_files, own=(r.split(">")[0].split("=")[0] for r in KIT_REQUIREMENTS),
                             local={p.stem for p in student_files if p.suffix == ".py"} | {"grader"})
    (kit / REQUIREMENTS_FILE).write_text(needs.requirements_txt(), encoding="utf-8")
    if STUDENT_GUIDE.is_file():  # written for the example assignment; the kit's own name in its place
        guide = STUDENT_GUIDE.read_text(encoding="utf-8").replace(GUIDE_EXAMPLE, name)
        guide = guide.replace(NEEDS_MARKER, needs_sentence(needs))
        (kit / KIT_GUIDE).write_text(guide, encoding="utf-8")
    return kit
