"""The grader's `d2l`: the current edition's own idioms (d2l.Module, save_hyperparameters, add_to_class) run for
real, plotting stays a no-op, and the names an assignment asks students to write stay withheld.

The stand-in is checked in this process first (grader/execute/child/stubs.py imports nothing from the grader), then
in a student's process through each way the book imports it, and last by grading a whole submission in the book's
style through the pipeline."""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from torch import nn

from grader.discover import read_program
from grader.execute import Limits, LoadedUnit, StudentProcess, isolation
from grader.execute.child import stubs
from grader.execute.workers import Worker
from grader.pipeline import RunOptions, RunRequest, grade_class

from .conftest import ROOT

BOOK_STYLE = ROOT / "tests" / "submissions" / "real_style" / "attention_scoring" / "d2l_module_style.py"
WITHHELD_MESSAGE = "this assignment asks you to write {} yourself"


def d2l(name: str = "d2l.torch") -> stubs.D2lModule:
    return stubs.D2lModule(name, "d2l is not installed in the grader: its plotting calls were skipped")


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """As while attention_scoring loads: the four answers withheld, nothing provided."""
    monkeypatch.setattr(stubs.D2lModule, "withheld", frozenset(
        {"masked_softmax", "AdditiveAttention", "DotProductAttention", "BilinearAttention"}))
    monkeypatch.setattr(stubs.D2lModule, "provided", {})


# ----- in this process ------------------------------------------------------------------------------------------
def test_module_is_an_nn_module_that_saves_its_hyperparameters(answers: None) -> None:
    lib = d2l()

    class Scorer(lib.Module):
        def __init__(self, num_hiddens, dropout, _private=0, **kwargs):
            super().__init__()
            self.save_hyperparameters(ignore=["dropout"])
            self.W_q = nn.LazyLinear(num_hiddens, bias=False)
            self.w_v = nn.Linear(num_hiddens, 1, bias=False)
            self.dropout = nn.Dropout(dropout)

    model = Scorer(num_hiddens=4, dropout=0.25, extra="kept")
    assert isinstance(model, nn.Module) and isinstance(model, lib.HyperParameters)
    assert model.hparams == {"num_hiddens": 4, "kwargs": {"extra": "kept"}}  # not self, _private, nor ignored
    assert model.num_hiddens == 4 and model.kwargs == {"extra": "kept"}
    assert (model.plot_train_per_epoch, model.plot_valid_per_epoch) == (2, 1)  # d2l.Module's own, saved too
    assert model.dropout.p == 0.25  # the layer, not the saved float
    assert [name for name, _ in model.named_parameters()] == ["W_q.weight", "w_v.weight"]
    assert {name for name, _ in model.named_modules()} == {"", "W_q", "w_v", "dropout"}
    model.eval()
    assert not model.training and not model.dropout.training


def test_add_to_class_attaches_methods_as_the_book_does(answers: None) -> None:
    lib = d2l()

    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(3, 2)

    x = torch.ones(5, 3)
    net = Net()
    assert torch.equal(net(x), net.net(x))  # d2l.Module.forward calls self.net

    @lib.add_to_class(Net)
    def forward(self, X):
        return 2 * self.net(X)

    assert forward is None  # the book's decorator returns nothing: the method lives on the class only
    assert torch.equal(net(x), 2 * net.net(x))  # an instance made before the decorator gets it too


def test_the_rest_of_the_module_runs_without_plotting(answers: None) -> None:
    lib = d2l()

    class Model(lib.Classifier):
        def __init__(self, lr):
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(3))

    model = Model(lr=0.1)
    model.apply_init([torch.ones(2, 4)], lib.init_seq2seq)
    loss = model.training_step((torch.ones(2, 4), torch.tensor([0, 2])))
    assert loss.shape == () and loss.requires_grad
    assert isinstance(model.configure_optimizers(), torch.optim.SGD)
    assert model.accuracy(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([1])) == 1.0
    assert "d2l is not installed in the grader: its plotting calls were skipped" in stubs.NOTES


def test_withheld_and_provided_come_before_the_real_pieces(answers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = d2l()
    for name in ("masked_softmax", "AdditiveAttention", "DotProductAttention"):
        with pytest.raises(AttributeError, match=WITHHELD_MESSAGE.format(name)):
            getattr(lib, name)
    assert lib.sequence_mask is stubs.sequence_mask and lib.Module is d2l("d2l").Module

    def reference(X, valid_lens):
        return "the reference"

    monkeypatch.setattr(stubs.D2lModule, "provided", {"masked_softmax": reference, "Module": reference})
    assert lib.masked_softmax is reference and lib.Module is reference


def test_masked_softmax_is_the_books_when_no_assignment_asks_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stubs.D2lModule, "withheld", frozenset({"AdditiveAttention"}))
    lib = d2l()
    X = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]]])
    expected = torch.stack([torch.cat([torch.softmax(X[0, 0, :2], -1), torch.zeros(2)]),
                            torch.cat([torch.softmax(X[0, 1, :3], -1), torch.zeros(1)])])[None]
    assert torch.allclose(lib.masked_softmax(X.clone(), torch.tensor([[2, 3]])), expected)
    assert torch.allclose(lib.masked_softmax(X.clone(), None), torch.softmax(X, -1))
    assert torch.allclose(lib.masked_softmax(X.clone(), torch.tensor([1]))[0, :, 0], torch.ones(2))


def test_devices_helpers_and_sinks(answers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = d2l()
    assert lib.try_gpu() == torch.device("cpu") and lib.try_all_gpus() == [] and lib.num_gpus() == 0
    assert not torch.cuda.is_initialized()
    monkeypatch.setattr(stubs, "DEVICE", "cuda:1")  # grading on a GPU: the grader's device, no CUDA call to find it
    assert lib.try_gpu() == torch.device("cuda:1") and lib.try_gpu(1) == torch.device("cpu")
    assert lib.try_all_gpus() == [torch.device("cuda:1")] and lib.gpu(0) == torch.device("cuda:0")
    assert not torch.cuda.is_initialized()
    lib.check_shape(torch.ones(2, 1, 4), (2, 1, 4))
    with pytest.raises(AssertionError, match="expected shape"):
        lib.check_shape(torch.ones(2, 4), (2, 1, 4))
    assert lib.numpy(torch.ones(2, requires_grad=True)).tolist() == [1.0, 1.0] and lib.np.ones(1).shape == (1,)
    assert lib.reduce_sum(torch.ones(3)) == 3 and lib.nn is nn and lib.torch is torch
    assert isinstance(lib.show_heatmaps(torch.ones(1, 1, 2, 2), xlabel="Keys", ylabel="Queries"), stubs.Sink)
    assert isinstance(lib.plt, stubs.Sink)
    assert set(stubs.textbook()) == stubs.TEXTBOOK_NAMES - stubs.D2lModule.withheld  # an answer is never built
    assert repr(lib.Module) == "<class 'd2l.torch.Module'>"


# ----- in a student's process -----------------------------------------------------------------------------------
FAST = Limits(call_seconds=5.0, unit_seconds=5.0, submission_seconds=60.0, stream_cap=10_000)
WARM: Worker | None = None


@pytest.fixture(scope="module", autouse=True)
def warm() -> Iterator[None]:
    global WARM
    WARM = Worker(sandbox=isolation.detect(), device="cpu", limits=FAST)
    WARM.start()
    yield
    WARM.close()


@contextmanager
def loaded(source: str, *, withheld: tuple[str, ...] = ()) -> Iterator[list[LoadedUnit]]:
    """Run a .py in a student's process forked by the warm worker, as a class run does."""
    program = read_program(textwrap.dedent(source).encode(), kind="python", name="student.py", written_ids=[])
    try:
        with StudentProcess(limits=FAST, deadline=time.monotonic() + FAST.submission_seconds, sandbox=None,
                            worker=WARM) as process:
            process.start()
            yield process.load(units=program.wire_units(), module_name=program.module_name,
                               stop_on_exit=program.stop_on_exit, withheld=withheld)
    finally:
        assert WARM is not None and (WARM.clean() or not WARM.alive)


def errors(units: list[LoadedUnit]) -> list[str]:
    return [f"{u.error_type}: {u.error_message}\n{u.traceback}" for u in units if u.status != "ok"]


def test_every_way_the_book_imports_d2l() -> None:
    source = """
        import d2l
        import d2l.torch
        from d2l import torch as d2l_torch
        from d2l.torch import Module, HyperParameters, add_to_class, masked_softmax
        assert d2l.Module is d2l.torch.Module is d2l_torch.Module is Module and d2l_torch is d2l.torch

        class MultiHead(Module):
            def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
                super().__init__()
                self.save_hyperparameters()
                self.W_q = d2l.nn.LazyLinear(num_hiddens, bias=bias)

        @add_to_class(MultiHead)
        def forward(self, X):
            return self.W_q(X).reshape(X.shape[0], X.shape[1], self.num_heads, -1)

        model = MultiHead(8, 2, 0.5)
        print(tuple(model(d2l.torch.ones(3, 4, 5)).shape), model.num_heads, model.bias, sorted(model.hparams))
        print(masked_softmax(d2l.ones(1, 1, 3), d2l.tensor([2])).tolist(), d2l.try_gpu())
    """
    with loaded(source, withheld=("AdditiveAttention",)) as units:
        assert not errors(units)
        assert units[-2].stdout == "(3, 4, 2, 4) 2 False ['bias', 'dropout', 'kwargs', 'num_heads', 'num_hiddens']\n"
        assert units[-1].stdout == "[[[0.5, 0.5, 0.0]]] cpu\n"


def test_a_withheld_name_stays_withheld_beside_the_real_module() -> None:
    source = """
        from d2l import torch as d2l
        class Attention(d2l.Module):
            def __init__(self, dropout):
                super().__init__()
                self.save_hyperparameters()
        print(Attention(0.1).dropout)
        d2l.masked_softmax
    """
    with loaded(source, withheld=("masked_softmax",)) as units:
        assert [u.status for u in units] == ["ok", "ok", "ok", "error"]
        assert units[2].stdout == "0.1\n"
        assert WITHHELD_MESSAGE.format("masked_softmax") in (units[3].error_message or "")


def test_a_faithful_copy_of_the_books_multi_head_attention_runs() -> None:
    """d2l 11.5 as the book writes it: d2l.Module, d2l.DotProductAttention, methods added with add_to_class, and the
    book's own shape check; with 11.3's DotProductAttention withheld (an assignment asking for it), it says so."""
    source = """
        import math
        import torch
        from torch import nn
        from d2l import torch as d2l

        class MultiHeadAttention(d2l.Module):  #@save
            \"\"\"Multi-head attention.\"\"\"
            def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
                super().__init__()
                self.num_heads = num_heads
                self.attention = d2l.DotProductAttention(dropout)
                self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
                self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
                self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
                self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

            def forward(self, queries, keys, values, valid_lens):
                queries = self.transpose_qkv(self.W_q(queries))
                keys = self.transpose_qkv(self.W_k(keys))
                values = self.transpose_qkv(self.W_v(values))
                if valid_lens is not None:
                    valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
                output = self.attention(queries, keys, values, valid_lens)
                output_concat = self.transpose_output(output)
                return self.W_o(output_concat)

        @d2l.add_to_class(MultiHeadAttention)  #@save
        def transpose_qkv(self, X):
            X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
            X = X.permute(0, 2, 1, 3)
            return X.reshape(-1, X.shape[2], X.shape[3])

        @d2l.add_to_class(MultiHeadAttention)  #@save
        def transpose_output(self, X):
            X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
            X = X.permute(0, 2, 1, 3)
            return X.reshape(X.shape[0], X.shape[1], -1)

        num_hiddens, num_heads = 100, 5
        attention = MultiHeadAttention(num_hiddens, num_heads, 0.5)
        batch_size, num_queries, num_kvpairs = 2, 4, 6
        valid_lens = torch.tensor([3, 2])
        X = torch.ones((batch_size, num_queries, num_hiddens))
        Y = torch.ones((batch_size, num_kvpairs, num_hiddens))
        d2l.check_shape(attention(X, Y, Y, valid_lens), (batch_size, num_queries, num_hiddens))
        print(tuple(attention.attention.attention_weights.shape), type(attention.attention).__name__)
        d2l.show_heatmaps(attention.attention.attention_weights.reshape((2, 5, 4, 6)), xlabel="Keys", ylabel="Queries")
    """
    with loaded(source) as units:
        assert not errors(units)
        assert "(10, 4, 6) DotProductAttention" in "".join(u.stdout for u in units)
    with loaded(source, withheld=("DotProductAttention",)) as units:
        failed = [u for u in units if u.status != "ok"]
        assert failed and WITHHELD_MESSAGE.format("DotProductAttention") in (failed[0].error_message or "")


def test_the_book_style_submission_loads_without_an_error() -> None:
    withheld = ("masked_softmax", "AdditiveAttention", "DotProductAttention", "BilinearAttention")
    with loaded(BOOK_STYLE.read_text(), withheld=withheld) as units:
        assert not errors(units)
        assert "'num_hiddens': 8" in "".join(u.stdout for u in units)  # print(attention.hparams)


# ----- through the pipeline -------------------------------------------------------------------------------------
def test_d2l_module_style_earns_full_marks(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(BOOK_STYLE, submissions / BOOK_STYLE.name)
    run = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=submissions, out_dir=tmp_path / "out"),
                      RunOptions(jobs=1))
    (result,) = run.results
    assert {q.id: q.score for q in result.questions} == {"q1": 25, "q2": 30, "q3": 25, "q4": 20}
    assert result.score == 100 and result.status == "graded"
    assert all(u.status == "ok" for u in result.units)
