"""The student's process, for real: cells, output capture, stubs, time limits, crashes and plain-data replies."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grader.check.student import StudentCode
from grader.discover import read_program
from grader.errors import CallTimedOut, ProcessDied, StudentRaised
from grader.execute import Arg, Limits, LoadedUnit, StudentProcess, isolation
from grader.execute.isolation import Sandbox
from grader.execute.workers import Worker

FAST = Limits(call_seconds=2.0, unit_seconds=1.0, submission_seconds=60.0, stream_cap=1000)


@pytest.fixture(scope="module", autouse=True)
def warm() -> Iterator[None]:
    """One warm worker forks every test's process, as in a class run (a test with its own sandbox starts its own)."""
    global WARM
    WARM = Worker(sandbox=isolation.detect(), device="cpu", limits=FAST)
    WARM.start()
    yield
    WARM.close()


WARM: Worker | None = None


@contextmanager
def loaded(source: str | list[str], *, limits: Limits = FAST, withheld: tuple[str, ...] = (),
           sandbox: Sandbox | None = None) -> Iterator[tuple[StudentProcess, list[LoadedUnit]]]:
    """Start a process and load a .py (a string) or a notebook (a list of code cells)."""
    if isinstance(source, str):
        data, kind = textwrap.dedent(source).encode(), "python"
    else:
        cells = [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in source]
        data, kind = nbformat.writes(nbformat.v4.new_notebook(cells=cells)).encode(), "notebook"
    program = read_program(data, kind=kind, name="student.py", written_ids=[])
    worker = WARM if sandbox is None else None
    try:
        with StudentProcess(limits=limits, deadline=time.monotonic() + limits.submission_seconds, sandbox=sandbox,
                            worker=worker) as process:
            process.start()
            units = process.load(units=program.wire_units(), module_name=program.module_name,
                                 stop_on_exit=program.stop_on_exit, withheld=withheld)
            yield process, units
    finally:
        if worker is not None:
            assert worker.clean() or not worker.alive  # the next test starts from a clean worker


def group_is_gone(pgid: int, within: float = 5.0) -> bool:
    """SIGKILL is asynchronous and orphans are reaped by init: poll until no process is left in the group."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@contextmanager
def question(process: StudentProcess) -> Iterator[StudentCode]:
    with process.question(provided_files=(), provided_names=()) as session:
        yield StudentCode(session)


def test_notebook_cells_go_on_after_errors_and_exits() -> None:
    cells = ["x = 1", "raise ValueError('boom')", "print('after', x)", "import sys; sys.exit(3)", "y = 2"]
    with loaded(cells) as (process, units):
        assert [u.status for u in units] == ["ok", "error", "ok", "exit", "ok"]
        assert (units[1].error_type, units[1].error_message) == ("ValueError", "boom")
        assert '<cell 2>", line 1' in units[1].traceback
        assert units[2].stdout == "after 1\n"
        with question(process) as code:
            assert code.describe("y").exists


def test_python_file_stops_at_sys_exit_keeping_what_it_defined() -> None:
    source = """
        def f():
            return 1
        import sys; sys.exit(0)
        def g():
            return 2
    """
    with loaded(source) as (process, units):
        assert [u.status for u in units] == ["ok", "exit", "skipped"]
        with question(process) as code:
            assert code.describe("f").exists and not code.describe("g").exists


def test_output_is_captured_per_cell_and_capped() -> None:
    cells = ["print('x' * 100_000)", "import warnings, sys\nwarnings.warn('careful')\nprint('err', file=sys.stderr)",
             "import os\nos.write(1, b'raw bytes')"]
    with loaded(cells) as (process, units):
        assert len(units[0].stdout) == FAST.stream_cap and units[0].dropped == 100_001 - FAST.stream_cap
        assert "UserWarning: careful" in units[1].stderr and "err\n" in units[1].stderr
        assert [u.status for u in units] == ["ok", "ok", "ok"]
        assert process.raw_output() == "raw bytes"


def test_a_slow_cell_is_stopped_and_loading_goes_on() -> None:
    with loaded(["while True:\n    pass", "after = True"]) as (_, units):
        assert [u.status for u in units] == ["timeout", "ok"]
        assert units[0].error_message == "stopped after 1 s"


def test_plotting_d2l_and_ipython_are_stubbed() -> None:
    cells = [
        "%matplotlib inline\n!pip install d2l\nimport torch\nfrom d2l import torch as d2l",
        "import matplotlib.pyplot as plt\nfig, (a, b) = plt.subplots(1, 2)\n"
        "a.imshow([[1]]); plt.colorbar(); plt.show()",
        "d2l.show_heatmaps(torch.ones(1, 1, 2, 2), xlabel='Keys', ylabel='Queries')\ndisplay(torch.ones(1))",
        "masked = d2l.sequence_mask(torch.ones(2, 3), torch.tensor([1, 2]), value=-1.0)\nprint(masked.tolist())",
        "d2l.masked_softmax",
    ]
    with loaded(cells, withheld=("masked_softmax",)) as (_, units):
        assert [u.status for u in units] == ["ok", "ok", "ok", "ok", "error"]
        assert "skipped shell command `!pip install d2l`" in units[0].notes[0]
        assert units[2].stdout == "tensor([1.])\n"
        assert units[3].stdout == "[[1.0, -1.0, -1.0], [1.0, 1.0, -1.0]]\n"
        assert "asks you to write masked_softmax yourself" in (units[4].error_message or "")


def test_a_call_past_its_time_limit_kills_the_whole_process_group() -> None:
    source = """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        def spin():
            while True:
                pass
    """
    with loaded(source) as (process, _):
        pgid = process.pid
        assert pgid is not None
        started = time.monotonic()
        with pytest.raises(CallTimedOut, match=r"no answer within the time limit \(2 s\)"), question(process) as code:
            code.function("spin")()
        assert time.monotonic() - started < FAST.call_seconds + 2
        assert not process.alive
        assert group_is_gone(pgid)  # the sleeping grandchild died with it


def test_exits_inside_calls() -> None:
    source = """
        import os, sys
        def leave():
            sys.exit(5)
        def die():
            os._exit(7)
    """
    with loaded(source) as (process, _):
        with question(process) as code:
            with pytest.raises(StudentRaised, match=r"leave.* raised SystemExit: 5"):
                code.function("leave")()
            with pytest.raises(ProcessDied, match="exit code 7"):
                code.function("die")()
        assert process.alive  # only the question's fork ended; the loaded submission is still there
        with question(process) as code:
            assert code.describe("die").exists


def test_only_plain_data_comes_back() -> None:
    source = """
        import numpy as np, torch
        class Liar(torch.Tensor):
            def __eq__(self, other):
                return True
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return torch.zeros(3)
        class Hostile:
            def __repr__(self):
                raise RuntimeError("no")
        def subclass():
            return torch.ones(3).as_subclass(Liar)
        def as_list():
            return [1.0, 2.0]
        def as_numpy():
            return np.ones(2)
        def hostile():
            return Hostile()
        def pair():
            return torch.ones(2, requires_grad=True) * 2, None
    """
    with loaded(source) as (process, _), question(process) as code:
        liar = code.function("subclass")()
        assert (liar.kind, liar.type_name, liar.array) == ("tensor_subclass", "submission.Liar", None)
        assert code.function("as_list")().describe() == "a list of 2 items"
        assert code.function("as_numpy")().kind == "ndarray"
        assert code.function("hostile")().value == "<unprintable Hostile: RuntimeError>"
        tensor, none = code.function("pair")().items
        assert tensor.is_tensor and none.kind == "none"
        np.testing.assert_array_equal(tensor.array, [2.0, 2.0])


def test_arguments_arrive_as_fresh_tensors_of_the_requested_dtype() -> None:
    source = """
        def describe(x, n):
            x.add_(1)  # mutating the argument must not leak into the next call
            return str(x.dtype), x.sum().item(), n
    """
    with loaded(source) as (process, _), question(process) as code:
        for _ in range(2):
            dtype, total, n = code.function("describe")(Arg.tensor(np.zeros(3), "float64"), 4).items
            assert (dtype.value, total.value, n.value) == ("torch.float64", 3.0, 4)


def test_a_submission_that_ignores_the_cell_alarm_hits_the_submission_limit() -> None:
    cells = ["import time\nwhile True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass"]
    limits = Limits(call_seconds=2.0, unit_seconds=0.5, submission_seconds=4.0)
    started = time.monotonic()
    with pytest.raises(CallTimedOut, match=r"the submission's time limit \(4 s\)"), loaded(cells, limits=limits):
        pass
    assert time.monotonic() - started < 8


def test_killing_the_process_leaves_nothing_running() -> None:
    source = "import subprocess, sys\nchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])"
    with loaded(source) as (process, _):
        pgid = process.pid
        assert pgid is not None
    assert group_is_gone(pgid)


def test_an_array_larger_than_the_limit_is_described_not_sent() -> None:
    limits = Limits(call_seconds=5.0, unit_seconds=2.0, submission_seconds=60.0, max_array_elements=1000)
    with loaded("import torch\ndef big():\n    return torch.zeros(100, 100)\n", limits=limits) as (process, _), \
            question(process) as code:
        value = code.function("big")()
        assert value.shape == (100, 100) and value.array is None


def test_a_reply_announcing_too_large_an_array_is_refused_before_it_is_read() -> None:
    """Student code can replace the child's own encoder; the grader still judges the announced shape first."""
    source = """
        import sys, torch
        frame = sys._getframe()  # the runtime's modules are not importable by name, but its frames are its callers
        while "convert" not in frame.f_globals:
            frame = frame.f_back
        encoder = frame.f_globals["convert"]
        honest = encoder.encode
        encoder.encode = lambda value, blobs, depth=0, **kw: honest(value, blobs, depth, max_elements=10**12)
        def big():
            return torch.zeros(100, 100)
    """
    limits = Limits(call_seconds=5.0, unit_seconds=2.0, submission_seconds=60.0, max_array_elements=1000)
    with loaded(source, limits=limits) as (process, _), question(process) as code:
        with pytest.raises(ProcessDied, match=r"array of shape \(100, 100\) is larger than the grader reads"):
            code.function("big")()
        assert not process.alive


def test_a_unit_that_ignores_its_alarm_is_blamed_by_index() -> None:
    from grader.execute.process import LoadInterrupted

    source = ["x = 1", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass", "y = 2"]
    limits = Limits(call_seconds=2.0, unit_seconds=0.5, submission_seconds=60.0)
    with pytest.raises(LoadInterrupted) as caught, loaded(source, limits=limits):
        pass
    assert caught.value.index == 1 and isinstance(caught.value.cause, CallTimedOut)


def test_the_user_namespace_layer_used_when_the_grader_is_not_root() -> None:
    """Here the grader runs as root and switches the uid for real; the layout for everyone else must work too."""
    import dataclasses

    from grader.execute import isolation

    sandbox = isolation.detect("require")
    flags = (*isolation.BWRAP_NAMESPACES, *isolation.BWRAP_COMMON, *isolation.USER_NS, "--disable-userns")
    user_ns = dataclasses.replace(sandbox, bwrap_flags=flags, student_uid=None)
    grader_dir = Path(isolation.__file__).parents[1]
    source = f"import os\ndef probe():\n    return [os.getuid(), os.path.exists({str(grader_dir)!r}), os.getppid()]\n"
    with loaded(source, sandbox=user_ns) as (process, units), question(process) as code:
        assert units[0].status == "ok" and process.hello["uid"] == 65534
        # pid 1 is the warm worker (its namespace's init, out of its students' reach), pid 2 the loaded submission
        # it forked, the question's fork its child: the grader is not in this pid namespace at all.
        assert [item.value for item in code.function("probe")().items] == [65534, False, 2]
    assert "in a user namespace" in user_ns.describe()


def test_an_error_in_a_request_not_waited_for_is_named_as_its_own() -> None:
    """eval(), train() and setting weights are sent without waiting for their answers: when one raises, the error
    surfaces at the next answer awaited, named as the request that raised, and nothing after it is lost."""
    source = """
        import torch
        class Stubborn(torch.nn.Module):
            def eval(self):
                raise RuntimeError("no eval for me")
        def ok():
            return 1
    """
    with loaded(source) as (process, _), question(process) as code:
        model = code.construct("Stubborn")
        model.eval()  # sent; its failure is not known yet
        with pytest.raises(StudentRaised, match=r"Stubborn.eval raised RuntimeError: no eval for me"):
            code.function("ok")()
        assert code.function("ok")().value == 1  # the answer to the awaited call was read, in order
        model.eval()
        with pytest.raises(StudentRaised, match="no eval for me"):
            code.settle()
        model.train()  # fine: no error to surface
        code.settle()


def test_an_attribute_is_read_through_submodules_by_a_dotted_path() -> None:
    """Per-head weights often live on an inner layer (``self.attention.attention_weights``): a check reads them by
    the dotted path, and a path that stops anywhere reads as no attribute."""
    source = """
        import torch
        class Inner(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.attention_weights = torch.ones(2, 3)
        class Outer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.attention = Inner()
    """
    with loaded(source) as (process, _), question(process) as code:
        model = code.construct("Outer")
        weights = model.attribute("attention.attention_weights")
        assert weights is not None and weights.shape == (2, 3) and float(weights.array.sum()) == 6.0
        assert model.attribute("attention.missing") is None
        assert model.attribute("nothing.attention_weights") is None
