"""Stand-ins for what a notebook uses around its answers but the grader must not run.

Plotting libraries, ``d2l`` and IPython's shell are replaced by modules whose unknown attributes are no-op
"sinks": a heatmap cell then runs without matplotlib, and ``!pip install`` or ``%matplotlib inline`` do nothing.
``d2l`` keeps, for real, the pieces of the textbook that students' code builds on (``d2l.Module``,
``save_hyperparameters``, ``add_to_class``, ``sequence_mask``, ``masked_softmax``, the device helpers and
tensor aliases: see ``textbook``), but withholds the names the assignment asks students to write, unless a
question provides the reference in their place.
"""

from __future__ import annotations

import gc
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, ClassVar

STUBBED_TOP_LEVEL = ("d2l", "matplotlib", "seaborn", "IPython", "plotly", "grader")

NOTES: list[str] = []


def note(text: str) -> None:
    if text not in NOTES:
        NOTES.append(text)


class Sink:
    """Absorbs any use: attribute access, calls, indexing, iteration (as a pair), context managers."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_sink_name", name)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Sink(f"{self._sink_name}.{attr}")

    def __setattr__(self, attr: str, value: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Sink:
        return Sink(f"{self._sink_name}()")

    def __getitem__(self, key: Any) -> Sink:
        return Sink(f"{self._sink_name}[]")

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __iter__(self):
        return iter((Sink(f"{self._sink_name}[0]"), Sink(f"{self._sink_name}[1]")))

    def __len__(self) -> int:
        return 2

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{self._sink_name}: skipped by the grader>"

    def __format__(self, spec: str) -> str:  # f"{accuracy:.3f}" on a skipped result
        return repr(self)


KIT_MODULES = ("grader", "grader.kit")  # all of the grader a graded notebook can import: the kit's check, a no-op


def _kit_check(*args: Any, **kwargs: Any) -> None:
    """The student kit's check() while the grader grades: the grader checks."""


class KitStub(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # no other submodule is found in it: grader.check is not importable
        if name == "grader.kit":
            self.check = self.run = _kit_check


class StubModule(types.ModuleType):
    def __init__(self, name: str, reason: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []
        self._reason = reason

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        note(self._reason)
        return Sink(f"{self.__name__}.{attr}")


def sequence_mask(X: Any, valid_len: Any, value: float = 0) -> Any:
    """The textbook's d2l.sequence_mask (section 10.5), which solutions may call."""
    import torch

    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def withheld_message(name: str, question: str | None = None) -> str:
    """What a student reads who takes an answer from ``d2l``: the name, the question it answers, the fix."""
    where = f"the answer to {question}" if question else "an answer this assignment asks for"
    return (f"`d2l.{name}` is {where}: write your own (the grader's d2l withholds it; this assignment asks you to "
            f"write {name} yourself)")


# The names the stand-in refused while the submission ran (``d2l.DotProductAttention`` asked for where the assignment
# asks students to write it): the grader then says so for the question, not "not defined".
REFUSED: list[str] = []


def answer(name: str) -> Any:
    """``d2l.<name>`` as the stand-in answers it, for the textbook's own pieces that build on an answer (11.5's
    MultiHeadAttention on DotProductAttention): the reference while a later question is graded with it, a refusal
    while the assignment asks for it, otherwise the book's."""
    if name in D2lModule.provided:
        return D2lModule.provided[name]
    if name in D2lModule.withheld:
        if name not in REFUSED:
            REFUSED.append(name)
        raise AttributeError(withheld_message(name, D2lModule.withheld_by.get(name)))
    return textbook()[name]


class D2lModule(StubModule):
    """``d2l`` and ``d2l.torch``: plotting is a no-op, assignment answers are withheld or the reference, and the
    textbook's building blocks are real."""

    withheld: ClassVar[frozenset[str]] = frozenset()
    withheld_by: ClassVar[dict[str, str]] = {}  # a withheld name -> the question that asks for it
    provided: ClassVar[dict[str, Any]] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr in D2lModule.provided or attr in D2lModule.withheld:
            return answer(attr)
        if self.__name__ == "d2l" and attr in ("torch", "mxnet", "tensorflow", "jax"):
            return importlib.import_module(f"d2l.{attr}")  # `from d2l import torch as d2l`
        if attr in TEXTBOOK_NAMES:
            return textbook()[attr]
        return super().__getattr__(attr)


# The grading device (cpu, cuda, cuda:1), set by install: what d2l.try_gpu() answers, so that a student's
# `.to(d2l.try_gpu())` lands where the grader's tensors are. Asking torch instead (torch.cuda.device_count(), as d2l
# does) would start the CUDA driver in a process that must still fork, and would pick the GPU when grading on the CPU.
DEVICE = "cpu"

# What textbook() holds, known without building it, so that a sink lookup (d2l.plt, d2l.show_heatmaps) stays cheap.
TEXTBOOK_NAMES = frozenset({
    "add_to_class", "HyperParameters", "ProgressBoard", "Module", "Classifier", "DataModule", "Encoder", "Decoder",
    "EncoderDecoder", "AttentionDecoder", "sequence_mask", "masked_softmax", "check_len", "check_shape",
    "init_seq2seq", "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus",
    # chapter 11's attention modules, which later sections build on (11.5's MultiHeadAttention calls
    # d2l.DotProductAttention); an assignment that asks for one withholds it
    "DotProductAttention", "AdditiveAttention", "MultiHeadAttention", "PositionalEncoding",
    # d2l/torch.py's modules and aliases (its last lines)
    "torch", "nn", "F", "math", "np", "nn_Module", "ones_like", "ones", "zeros_like", "zeros", "tensor", "arange",
    "meshgrid", "sin", "sinh", "cos", "cosh", "tanh", "linspace", "exp", "log", "normal", "rand", "randn", "matmul",
    "int32", "int64", "float32", "concat", "stack", "abs", "eye", "sigmoid", "batch_matmul", "numpy", "size",
    "reshape", "to", "reduce_sum", "argmax", "astype", "transpose", "reduce_mean", "expand_dims", "swapaxes",
    "repeat",
})
_TEXTBOOK: dict[str, Any] = {}
_BUILT_WITHOUT: list[frozenset[str]] = [frozenset()]  # the withheld names _TEXTBOOK was built without


def textbook() -> dict[str, Any]:
    """The real pieces of d2l 1.0.3's ``d2l/torch.py``, built on first use: a submission that never touches them
    costs nothing more, and the zygote does no more work before it forks. A piece the assignment asks students to
    write is never built (nothing in the process holds the book's answer), and the pieces that build on it
    (MultiHeadAttention on DotProductAttention) ask ``d2l`` for it when they run (``answer``)."""
    if not _TEXTBOOK or _BUILT_WITHOUT[0] != D2lModule.withheld:
        _TEXTBOOK.clear()
        _TEXTBOOK.update(_build_textbook(D2lModule.withheld))
        _BUILT_WITHOUT[0] = D2lModule.withheld
        gc.collect()  # the withheld pieces were made and dropped: no cycle of theirs is left for gc to find
    return _TEXTBOOK


def _build_textbook(withheld: frozenset[str] = frozenset()) -> dict[str, Any]:
    # The bodies follow d2l 1.0.3 (argument names and defaults included), so that the book's code behaves as on the
    # student's machine; only plotting (ProgressBoard.draw, so Module.plot) does nothing. Where the book calls another
    # of its answers, the call goes through answer() (reference, refusal or the book's, as d2l.<name> would).
    import inspect
    import math

    import numpy
    import torch
    from torch import nn
    from torch.nn import functional as F

    def add_to_class(Class):
        """Register functions as methods in created class."""
        def wrapper(obj):
            setattr(Class, obj.__name__, obj)
        return wrapper

    class HyperParameters:
        """The base class of hyperparameters."""
        def save_hyperparameters(self, ignore=()):
            """Save function arguments into class attributes."""
            frame = inspect.currentframe().f_back
            try:
                _, _, _, local_vars = inspect.getargvalues(frame)
            finally:
                del frame  # a frame held by a local is a cycle that keeps the caller's locals alive
            skip = {*ignore, "self"}
            self.hparams = {k: v for k, v in local_vars.items() if k not in skip and not k.startswith("_")}
            for k, v in self.hparams.items():
                setattr(self, k, v)

    class ProgressBoard(HyperParameters):
        """The board that plots data points in animation: here it draws nothing."""
        def __init__(self, xlabel=None, ylabel=None, xlim=None, ylim=None, xscale="linear", yscale="linear",
                     ls=("-", "--", "-.", ":"), colors=("C0", "C1", "C2", "C3"), fig=None, axes=None,
                     figsize=(3.5, 2.5), display=True):
            self.save_hyperparameters()

        def draw(self, x, y, label, every_n=1):
            note("d2l is not installed in the grader: its plotting calls were skipped")

    class Module(nn.Module, HyperParameters):
        """The base class of models."""
        def __init__(self, plot_train_per_epoch=2, plot_valid_per_epoch=1):
            super().__init__()
            self.save_hyperparameters()
            self.board = ProgressBoard()

        def loss(self, y_hat, y):
            raise NotImplementedError

        def forward(self, X):
            assert hasattr(self, "net"), "Neural network is defined"
            return self.net(X)

        def plot(self, key, value, train):
            """Plot a point in animation."""
            self.board.draw(None, value, ("train_" if train else "val_") + key)

        def training_step(self, batch):
            loss = self.loss(self(*batch[:-1]), batch[-1])
            self.plot("loss", loss, train=True)
            return loss

        def validation_step(self, batch):
            loss = self.loss(self(*batch[:-1]), batch[-1])
            self.plot("loss", loss, train=False)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.lr)

        def apply_init(self, inputs, init=None):
            self.forward(*inputs)
            if init is not None:
                self.net.apply(init)

    class Classifier(Module):
        """The base class of classification models."""
        def validation_step(self, batch):
            Y_hat = self(*batch[:-1])
            self.plot("loss", self.loss(Y_hat, batch[-1]), train=False)
            self.plot("acc", self.accuracy(Y_hat, batch[-1]), train=False)

        def accuracy(self, Y_hat, Y, averaged=True):
            """Compute the number of correct predictions."""
            Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
            preds = Y_hat.argmax(axis=1).type(Y.dtype)
            compare = (preds == Y.reshape(-1)).type(torch.float32)
            return compare.mean() if averaged else compare

        def loss(self, Y_hat, Y, averaged=True):
            Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
            Y = Y.reshape((-1,))
            return F.cross_entropy(Y_hat, Y, reduction="mean" if averaged else "none")

        def layer_summary(self, X_shape):
            X = torch.randn(*X_shape)
            for layer in self.net:
                X = layer(X)
                print(layer.__class__.__name__, "output shape:\t", X.shape)

    class DataModule(HyperParameters):
        """The base class of data (the book's own data sets are downloads: they stay sinks)."""
        def __init__(self, root="../data", num_workers=4):
            self.save_hyperparameters()

        def get_dataloader(self, train):
            raise NotImplementedError

        def train_dataloader(self):
            return self.get_dataloader(train=True)

        def val_dataloader(self):
            return self.get_dataloader(train=False)

        def get_tensorloader(self, tensors, train, indices=slice(0, None)):
            tensors = tuple(a[indices] for a in tensors)
            dataset = torch.utils.data.TensorDataset(*tensors)
            return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)

    class Encoder(nn.Module):
        """The base encoder interface for the encoder--decoder architecture."""
        def __init__(self):
            super().__init__()

        def forward(self, X, *args):
            raise NotImplementedError

    class Decoder(nn.Module):
        """The base decoder interface for the encoder--decoder architecture."""
        def __init__(self):
            super().__init__()

        def init_state(self, enc_all_outputs, *args):
            raise NotImplementedError

        def forward(self, X, state):
            raise NotImplementedError

    class EncoderDecoder(Classifier):
        """The base class for the encoder--decoder architecture."""
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, enc_X, dec_X, *args):
            enc_all_outputs = self.encoder(enc_X, *args)
            dec_state = self.decoder.init_state(enc_all_outputs, *args)
            return self.decoder(dec_X, dec_state)[0]  # the decoder's output only

        def predict_step(self, batch, device, num_steps, save_attention_weights=False):
            batch = [a.to(device) for a in batch]
            src, tgt, src_valid_len, _ = batch
            enc_all_outputs = self.encoder(src, src_valid_len)
            dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
            outputs, attention_weights = [tgt[:, 0].unsqueeze(1)], []
            for _ in range(num_steps):
                Y, dec_state = self.decoder(outputs[-1], dec_state)
                outputs.append(Y.argmax(2))
                if save_attention_weights:
                    attention_weights.append(self.decoder.attention_weights)
            return torch.cat(outputs[1:], 1), attention_weights

    class AttentionDecoder(Decoder):
        """The base attention-based decoder interface."""
        def __init__(self):
            super().__init__()

        @property
        def attention_weights(self):
            raise NotImplementedError

    def masked_softmax(X, valid_lens):
        """Perform softmax operation by masking elements on the last axis (d2l 11.3)."""
        if valid_lens is None:
            return nn.functional.softmax(X, dim=-1)
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # -1e6 rather than -inf: a row with no valid key then averages, as in the book, instead of giving NaN
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)

    class DotProductAttention(nn.Module):
        """Scaled dot product attention (d2l 11.3)."""
        def __init__(self, dropout):
            super().__init__()
            self.dropout = nn.Dropout(dropout)

        def forward(self, queries, keys, values, valid_lens=None):
            d = queries.shape[-1]
            scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
            self.attention_weights = answer("masked_softmax")(scores, valid_lens)
            return torch.bmm(self.dropout(self.attention_weights), values)

    class AdditiveAttention(nn.Module):
        """Additive attention (d2l 11.3)."""
        def __init__(self, num_hiddens, dropout, **kwargs):
            super().__init__(**kwargs)
            self.W_k = nn.LazyLinear(num_hiddens, bias=False)
            self.W_q = nn.LazyLinear(num_hiddens, bias=False)
            self.w_v = nn.LazyLinear(1, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, queries, keys, values, valid_lens):
            queries, keys = self.W_q(queries), self.W_k(keys)
            features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
            scores = self.w_v(features).squeeze(-1)
            self.attention_weights = answer("masked_softmax")(scores, valid_lens)
            return torch.bmm(self.dropout(self.attention_weights), values)

    class MultiHeadAttention(Module):
        """Multi-head attention (d2l 11.5)."""
        def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
            super().__init__()
            self.num_heads = num_heads
            self.attention = answer("DotProductAttention")(dropout)
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
            return self.W_o(self.transpose_output(output))

        def transpose_qkv(self, X):
            """Transposition for parallel computation of multiple attention heads."""
            X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
            X = X.permute(0, 2, 1, 3)
            return X.reshape(-1, X.shape[2], X.shape[3])

        def transpose_output(self, X):
            """Reverse the operation of transpose_qkv."""
            X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
            X = X.permute(0, 2, 1, 3)
            return X.reshape(X.shape[0], X.shape[1], -1)

    class PositionalEncoding(nn.Module):
        """Positional encoding (d2l 11.6)."""
        def __init__(self, num_hiddens, dropout, max_len=1000):
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.P = torch.zeros((1, max_len, num_hiddens))
            X = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / torch.pow(
                10000, torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
            self.P[:, :, 0::2] = torch.sin(X)
            self.P[:, :, 1::2] = torch.cos(X)

        def forward(self, X):
            X = X + self.P[:, :X.shape[1], :].to(X.device)
            return self.dropout(X)

    def check_len(a, n):
        assert len(a) == n, f"list's length {len(a)} != expected length {n}"

    def check_shape(a, shape):
        assert a.shape == shape, f"tensor's shape {a.shape} != expected shape {shape}"

    def init_seq2seq(module):
        """Initialize weights for sequence-to-sequence learning."""
        if type(module) is nn.Linear:
            nn.init.xavier_uniform_(module.weight)
        if type(module) is nn.GRU:
            for param in module._flat_weights_names:
                if "weight" in param:
                    nn.init.xavier_uniform_(module._parameters[param])

    def cpu():
        return torch.device("cpu")

    def gpu(i=0):
        return torch.device(f"cuda:{i}")

    def num_gpus():
        return 1 if DEVICE.startswith("cuda") else 0  # the grader lends one device: see DEVICE

    def try_gpu(i=0):
        return torch.device(DEVICE) if num_gpus() >= i + 1 else cpu()

    def try_all_gpus():
        return [torch.device(DEVICE)] if num_gpus() else []

    pieces: dict[str, Any] = {
        "add_to_class": add_to_class, "HyperParameters": HyperParameters, "ProgressBoard": ProgressBoard,
        "Module": Module, "Classifier": Classifier, "DataModule": DataModule, "Encoder": Encoder, "Decoder": Decoder,
        "EncoderDecoder": EncoderDecoder, "AttentionDecoder": AttentionDecoder, "masked_softmax": masked_softmax,
        "check_len": check_len, "check_shape": check_shape, "init_seq2seq": init_seq2seq, "cpu": cpu, "gpu": gpu,
        "num_gpus": num_gpus, "try_gpu": try_gpu, "try_all_gpus": try_all_gpus,
        "DotProductAttention": DotProductAttention, "AdditiveAttention": AdditiveAttention,
        "MultiHeadAttention": MultiHeadAttention, "PositionalEncoding": PositionalEncoding,
    }
    for name in withheld:  # the assignment's answers: not in the process at all (see textbook)
        pieces.pop(name, None)
    for name, obj in pieces.items():  # named as d2l names them in reprs and pickles, not as locals of this function
        obj.__module__, obj.__qualname__ = "d2l.torch", name
    aliases: dict[str, Any] = {
        "sequence_mask": sequence_mask, "torch": torch, "nn": nn, "F": F, "math": math, "np": numpy,
        "nn_Module": nn.Module, "ones_like": torch.ones_like, "ones": torch.ones, "zeros_like": torch.zeros_like,
        "zeros": torch.zeros, "tensor": torch.tensor, "arange": torch.arange, "meshgrid": torch.meshgrid,
        "sin": torch.sin, "sinh": torch.sinh, "cos": torch.cos, "cosh": torch.cosh, "tanh": torch.tanh,
        "linspace": torch.linspace, "exp": torch.exp, "log": torch.log, "normal": torch.normal, "rand": torch.rand,
        "randn": torch.randn, "matmul": torch.matmul, "int32": torch.int32, "int64": torch.int64,
        "float32": torch.float32, "concat": torch.cat, "stack": torch.stack, "abs": torch.abs, "eye": torch.eye,
        "sigmoid": torch.sigmoid, "batch_matmul": torch.bmm,
        # d2l.numpy converts a tensor, as in the book (the NumPy module is d2l.np)
        "numpy": lambda x, *args, **kwargs: x.detach().numpy(*args, **kwargs),
        "size": lambda x, *args, **kwargs: x.numel(*args, **kwargs),
        "reshape": lambda x, *args, **kwargs: x.reshape(*args, **kwargs),
        "to": lambda x, *args, **kwargs: x.to(*args, **kwargs),
        "reduce_sum": lambda x, *args, **kwargs: x.sum(*args, **kwargs),
        "argmax": lambda x, *args, **kwargs: x.argmax(*args, **kwargs),
        "astype": lambda x, *args, **kwargs: x.type(*args, **kwargs),
        "transpose": lambda x, *args, **kwargs: x.t(*args, **kwargs),
        "reduce_mean": lambda x, *args, **kwargs: x.mean(*args, **kwargs),
        "expand_dims": lambda x, *args, **kwargs: x.unsqueeze(*args, **kwargs),
        "swapaxes": lambda x, *args, **kwargs: x.swapaxes(*args, **kwargs),
        "repeat": lambda x, *args, **kwargs: x.repeat(*args, **kwargs),
    }
    return {**pieces, **aliases}


def display(*objects: Any, **kwargs: Any) -> None:
    """IPython's display(): in the grader, print the text form."""
    for obj in objects:
        print(repr(obj))


class Shell:
    """What ``get_ipython()`` returns: runs %time/%%time/%%capture bodies, skips every other magic."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.user_ns = namespace

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> Any:
        if name == "time":
            exec(compile(line, "<%time>", "exec"), self.namespace)
        elif name not in ("matplotlib", "config", "load_ext", "autoreload", "pylab"):
            note(f"skipped %{name} (line magics other than %time do not run in the grader)")
        return None

    def run_cell_magic(self, name: str, line: str, cell: str) -> Any:
        if name in ("time", "capture"):
            exec(compile(cell, f"<%%{name}>", "exec"), self.namespace)
        else:
            note(f"skipped a %%{name} cell (cell magics other than %%time and %%capture do not run in the grader)")
        return None

    def system(self, command: str) -> None:
        if command.split()[:2] == ["grader", "check"]:
            return  # the templates' last cell, the student's self-check: nothing to tell them while grading
        note(f"skipped shell command `!{command.strip()}` (shell commands do not run in the grader)")

    def getoutput(self, command: str, split: bool = True) -> list[str]:
        self.system(command)
        return []

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Sink(f"get_ipython().{attr}")


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, shell: Shell, stubbed: dict[str, str]) -> None:
        self.shell = shell
        self.stubbed = stubbed  # the assignment's own stand-ins: module name -> the note students read

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top == "grader" and fullname not in KIT_MODULES:
            return None
        if top in STUBBED_TOP_LEVEL or top in self.stubbed:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        name = spec.name
        top = name.split(".")[0]
        if top == "d2l":
            return D2lModule(name, "d2l is not installed in the grader: its plotting calls were skipped")
        if top in self.stubbed:
            return StubModule(name, self.stubbed[top])
        if top == "grader":
            # The student kit's `check()` in a notebook being graded: it does nothing (the grader checks), and
            # the grader's own package stays out of the student's reach.
            return KitStub(name)
        module = StubModule(name, f"{top} is not used by the grader: plotting calls were skipped")
        if name in ("IPython", "IPython.display", "IPython.core.display"):
            module.display = display
            module.get_ipython = lambda: self.shell
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install(namespace: dict[str, Any], withheld: list[str] | dict[str, str], stubbed: dict[str, str],
            device: str = "cpu") -> Shell:
    """``withheld``: the names the assignment asks students to write, or a mapping of each to its question."""
    global DEVICE
    shell = Shell(namespace)
    D2lModule.withheld = frozenset(withheld)
    D2lModule.withheld_by = {str(k): str(v) for k, v in withheld.items()} if isinstance(withheld, dict) else {}
    REFUSED.clear()
    DEVICE = device
    tops = (*STUBBED_TOP_LEVEL, *stubbed)
    # Only when one of these packages was imported (a submodule comes with its package): the loop touches every
    # module's name, over a thousand with torch, and in a forked process each touch can copy a page.
    if any(top in sys.modules for top in tops):
        for name in list(sys.modules):
            if name.split(".")[0] in tops:
                del sys.modules[name]
    sys.meta_path.insert(0, StubFinder(shell, dict(stubbed)))
    namespace["get_ipython"] = lambda: shell
    namespace["display"] = display
    return shell


def provide(namespace: dict[str, Any], values: dict[str, Any]) -> None:
    """Put reference implementations in the student's namespace and behind ``d2l.<name>``."""
    namespace.update(values)
    D2lModule.provided = dict(values)
