"""Stand-ins for what a notebook uses around its answers but the grader must not run.

Plotting libraries, ``d2l`` and IPython's shell are replaced by modules whose unknown attributes are no-op
"sinks": a heatmap cell then runs without matplotlib, and ``!pip install`` or ``%matplotlib inline`` do nothing.
``d2l`` keeps the textbook helpers a solution may legitimately call (``sequence_mask``) but withholds the
names the assignment asks students to write, unless a question provides the reference in their place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, ClassVar

STUBBED_TOP_LEVEL = ("d2l", "matplotlib", "seaborn", "IPython", "plotly")

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


class D2lModule(StubModule):
    """``d2l`` and ``d2l.torch``: plotting is a no-op, assignment answers are withheld or the reference."""

    withheld: ClassVar[frozenset[str]] = frozenset()
    provided: ClassVar[dict[str, Any]] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr in D2lModule.provided:
            return D2lModule.provided[attr]
        if attr in D2lModule.withheld:
            raise AttributeError(
                f"d2l.{attr} is not available when grading: this assignment asks you to write {attr} yourself"
            )
        if attr == "sequence_mask":
            return sequence_mask
        if self.__name__ == "d2l" and attr in ("torch", "mxnet", "tensorflow", "jax"):
            return importlib.import_module(f"d2l.{attr}")  # `from d2l import torch as d2l`
        if attr in ("torch", "nn", "math", "np", "numpy"):
            return _real_module(attr)  # d2l.torch re-exports these
        return super().__getattr__(attr)


def _real_module(attr: str) -> Any:
    import math

    import numpy
    import torch

    return {"torch": torch, "nn": torch.nn, "math": math, "np": numpy, "numpy": numpy}[attr]


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
        module = StubModule(name, f"{top} is not used by the grader: plotting calls were skipped")
        if name in ("IPython", "IPython.display", "IPython.core.display"):
            module.display = display
            module.get_ipython = lambda: self.shell
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install(namespace: dict[str, Any], withheld: list[str], stubbed: dict[str, str]) -> Shell:
    shell = Shell(namespace)
    D2lModule.withheld = frozenset(withheld)
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
