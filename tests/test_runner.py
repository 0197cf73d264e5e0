"""Checks applied to a submission: restarts after timeouts and crashes, isolation, grading with the reference."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.execute import Limits
from grader.results import SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, TOY_CORRECT, write
from .warm_workers import grade_one

CORRECT = textwrap.indent(TOY_CORRECT, "    ")  # indented as the cases below edit it; write() dedents


@pytest.fixture(scope="module")
def toy() -> Assignment:
    return load_assignment("toy", solutions_dir=FIXTURE_SOLUTIONS)


def grade(tmp_path: Path, toy: Assignment, source: str, *, name: str = "student.py",
          limits: Limits | None = None) -> SubmissionResult:
    path = write(tmp_path, name, source)
    submission = Submission(path.stem, path, "notebook" if name.endswith(".ipynb") else "python",
                            datetime.now(UTC))
    return grade_one(submission=submission, assignment=toy, root=tmp_path, limits=limits)


def outcomes(result: SubmissionResult) -> dict[str, str]:
    return {c.check_id: c.status for c in result.checks}


def test_correct_submission_earns_everything_and_questions_are_isolated(tmp_path: Path, toy: Assignment) -> None:
    result = grade(tmp_path, toy, CORRECT)
    assert result.status == "graded"
    assert (result.score, result.max_score) == (5, 5)
    # q2's check called bump() in its own fork; q3 still sees counter == 0 before its call.
    assert outcomes(result)["q3.fresh"] == "passed"
    assert result.questions[1].notes == ()
    assert [c.line for c in result.choices] == [
        "q2: graded with the reference scale in place of yours, because a mistake there then costs points only in q1."]


def test_a_mistake_is_not_penalised_twice(tmp_path: Path, toy: Assignment) -> None:
    result = grade(tmp_path, toy, CORRECT.replace("return x * 2", "return x * 3"))
    assert {q.id: q.score for q in result.questions} == {"q1": 0, "q2": 2, "q3": 1}
    first = result.checks[0]
    assert first.message.startswith("scale(x) differs from the reference in 3 of 3 entries")
    twice = next(c for c in result.checks if c.check_id == "q2.twice")
    assert twice.passed
    assert twice.notes[0].startswith("With your own scale, this check fails: twice_scaled(x) differs")
    assert result.questions[1].notes[0] == ("With your own scale in place of the reference's, \"twice_scaled(x) "
                                            "= scale(scale(x))\" would fail; with the reference, it passes, which "
                                            "counts.")


def test_hidden_check_messages_reveal_no_values(tmp_path: Path, toy: Assignment) -> None:
    result = grade(tmp_path, toy, CORRECT.replace("return x * 2", "return x * 3"))
    hidden = next(c for c in result.checks if c.check_id == "q1.second")
    assert hidden.message == "scale(x) differs from the reference in 100% of entries"
    assert "expected" in hidden.detail  # the instructor still sees the numbers


def test_a_call_that_hangs_costs_one_time_limit(tmp_path: Path, toy: Assignment) -> None:
    """The hanging check waits out the limit (its process is killed and started again); a later call of the same
    function is not made, and fails at once as a timeout that says where it ran away, even on inputs it would have
    answered (here it hangs on q1's first input only); the other questions are graded as ever."""
    source = CORRECT.replace("        return x * 2",
                             "        while float(x.sum()) == 6.0:\n            pass\n        return x * 2")
    result = grade(tmp_path, toy, source)
    assert outcomes(result) == {"q1.first": "timeout", "q1.second": "timeout", "q2.twice": "passed",
                                "q3.fresh": "passed"}
    assert "no answer within the time limit (2 s)" in result.checks[0].message
    assert result.checks[1].message == ('not called again: your scale did not answer within the time limit (2 s) in '
                                        'q1 "scale([1, 2, 3])"')
    assert result.questions[1].notes == ('Not run with your own scale: it did not answer within the time limit (2 s) '
                                         'in q1 "scale([1, 2, 3])", so it was not called again; the result with the '
                                         'reference counts.',)
    assert any("started again 1 time(s)" in note for note in result.notes)


def test_a_call_that_kills_the_process_costs_only_its_check(tmp_path: Path, toy: Assignment) -> None:
    source = CORRECT.replace("        return x * 2",
                             "        if float(x.sum()) == 6.0:\n            os._exit(9)\n        return x * 2")
    source = source.replace("def scale", "import os\n    def scale", 1)
    result = grade(tmp_path, toy, source)
    assert outcomes(result)["q1.first"] == "crashed"
    assert "exit code 9" in result.checks[0].message
    assert outcomes(result)["q1.second"] == "passed"
    assert result.score == 4


def test_the_last_question_answered_by_the_loaded_process_itself_keeps_its_output_and_its_crashes(
        tmp_path: Path, toy: Assignment) -> None:
    # q3, the last question, is answered by the loaded submission, not a fork of it: the same output, the same
    # message when the code ends the process, and earlier questions' changes still unseen.
    printing = CORRECT.replace("        counter += 1", "        counter += 1\n        print('bumped to', counter)")
    result = grade(tmp_path, toy, printing)
    assert result.score == 5 and result.questions[2].stdout == "bumped to 1\n"
    assert result.questions[1].stdout == "bumped to 1\n"  # q2's own bump, in its fork
    # Only in q3: q2 runs with the reference's module loaded beside the student's code.
    dying = CORRECT.replace("        counter += 1",
                            "        if 'reference' not in sys.modules:\n            os._exit(9)")
    dying = dying.replace("def scale", "import os, sys\n    def scale", 1)
    result = grade(tmp_path, toy, dying)
    assert outcomes(result) == {"q1.first": "passed", "q1.second": "passed", "q2.twice": "passed",
                                "q3.fresh": "crashed"}
    assert result.checks[-1].message == "your code ended the process while the grader waited for bump(...) " \
                                        "(exit code 9)"


def test_code_that_used_the_gpu_while_loading_answers_each_question_in_a_fresh_process(
        tmp_path: Path, toy: Assignment) -> None:
    # A CUDA context does not survive a fork, so a loaded process that started one is not forked per question: each
    # question gets a process of its own, started and loaded again. No GPU here: the code says it started CUDA.
    asking = CORRECT.replace("        counter += 1",
                             "        counter += 1\n        print('in place:', os.getppid() == LOADER)")
    asking = asking.replace("def scale", "import os\n    LOADER = os.getppid()\n    def scale", 1)
    normal = grade(tmp_path, toy, asking)
    assert [q.stdout for q in normal.questions[1:]] == ["in place: False\n", "in place: True\n"]  # q2 in a fork
    on_gpu = grade(tmp_path, toy, asking.replace("import os\n", "import os, torch\n"
                                                 "    torch.cuda.is_initialized = lambda: True\n", 1))
    assert [q.stdout for q in on_gpu.questions[1:]] == ["in place: True\n", "in place: True\n"]
    assert on_gpu.score == 5 and outcomes(on_gpu)["q3.fresh"] == "passed"  # q2's bump unseen by q3
    assert not any("started again" in note for note in on_gpu.notes)  # a process per question is no failure


def test_a_tensor_left_on_the_cpu_when_grading_on_the_gpu_is_explained(tmp_path: Path, toy: Assignment) -> None:
    # torch's own message, as code that makes a CPU tensor beside CUDA inputs gets it (seen on a GPU machine); raised
    # by hand here, where there is no GPU.
    source = CORRECT.replace("        return x * 2", "        raise RuntimeError('Expected all tensors to be on the "
                             "same device, but found at least two devices, cuda:0 and cpu!')")
    first = grade(tmp_path, toy, source).checks[0]
    assert first.status == "error"
    assert first.message.endswith("Your code made a tensor on the CPU while its inputs are on the GPU: create tensors "
                                  "on an input's device, e.g. torch.ones(n, device=X.device)")


def test_missing_names_point_at_the_cell_that_failed(tmp_path: Path, toy: Assignment) -> None:
    import nbformat

    cells = [nbformat.v4.new_code_cell("def scale(x):\n    return x * 2"),
             nbformat.v4.new_code_cell("def twice_scaled(x)\n    return scale(scale(x))")]
    result = grade(tmp_path, toy, nbformat.writes(nbformat.v4.new_notebook(cells=cells)), name="nb.ipynb")
    twice = next(c for c in result.checks if c.check_id == "q2.twice")
    assert twice.message == ("`twice_scaled` is not defined in your submission (cell [2] raised SyntaxError "
                             "while loading, which may be why)")
    assert [u.status for u in result.units] == ["ok", "error"]
    assert result.questions[0].score == 2


def test_a_submission_that_never_finishes_loading_times_out_with_every_check_recorded(
        tmp_path: Path, toy: Assignment) -> None:
    source = "import time\nwhile True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass\n"
    result = grade(tmp_path, toy, source, limits=Limits(call_seconds=1, unit_seconds=0.5, submission_seconds=3))
    assert result.status == "timeout"
    assert "no answer within the submission's time limit (3 s)" in result.reason
    assert len(result.checks) == 4 and all(c.status == "not_run" for c in result.checks)


def test_invalid_file_gets_a_result_for_every_check(tmp_path: Path, toy: Assignment) -> None:
    result = grade(tmp_path, toy, "def scale(x:\n    return x\n")
    assert result.status == "invalid"
    assert result.reason == "student.py has a syntax error at line 1, column 10: '(' was never closed; " \
                            "nothing in it could run"
    assert [c.status for c in result.checks] == ["not_run"] * 4
