"""The kit's guide (docs/student-kit.md, copied into every kit as CHECKING.md) installs torch from the PyTorch index
with options that make pip give up quickly where that index cannot be reached, and says what to do then (issue 46,
item 6). Without them pip waits about 2 minutes before it says anything.

The guide's own command runs against an index that never answers: a socket on the loopback address that accepts
connections and never replies, as a network that swallows the index's traffic does. pip runs with the guide's
options, plus ones that keep it from installing anything or reading this machine's pip configuration.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from grader.paths import STUDENT_GUIDE

from .conftest import ROOT

pytestmark = pytest.mark.slow
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
GUIDES = (ROOT / "docs" / "student-kit.md", ROOT / "docs" / "checking.md")  # the guide, and its summary
FAST_OPTIONS = {"--timeout": "10", "--retries": "1"}
BOUND_S = 60  # the guide's options give up in about 20 s; pip's own (15 s, 5 retries) took 98.5 s here
UNREACHABLE = "If the PyTorch index is out of reach"


def torch_commands(text: str) -> list[list[str]]:
    """The commands in ``text`` that install torch from the PyTorch index, as words (a trailing comment left out)."""
    return [shlex.split(line, comments=True) for line in text.splitlines() if f"--index-url {TORCH_INDEX}" in line]


def options(words: list[str]) -> dict[str, str]:
    return {word: value for word, value in itertools.pairwise(words) if word.startswith("--")}


@contextmanager
def silent_index() -> Iterator[str]:
    """An index URL on the loopback address whose server accepts every connection (the kernel does, on its backlog)
    and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"


def run_pip(words: list[str], index: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """``words`` (a guide's `python -m pip install torch --index-url ...`) run with this Python against ``index``:
    a dry run that ignores the torch installed here, without this machine's pip configuration (a local wheel folder
    or index would answer for torch); its seconds and what it printed."""
    assert words[:4] == ["python", "-m", "pip", "install"], words
    command = [sys.executable, *(index if word == TORCH_INDEX else word for word in words[1:]),
               "--dry-run", "--ignore-installed", "--no-cache-dir", "--disable-pip-version-check"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    return time.monotonic() - start, done


def test_the_guides_torch_install_gives_up_quickly_on_an_index_that_never_answers() -> None:
    guide = STUDENT_GUIDE.read_text(encoding="utf-8")
    (words,) = torch_commands(guide)
    with silent_index() as index:
        seconds, done = run_pip(words, index)
    assert done.returncode != 0, done.stdout + done.stderr
    assert seconds < BOUND_S, (seconds, done.stderr)
    # What pip printed is what the guide tells the student to look for.
    said = re.search(r"pip prints `WARNING: Retrying \.\.\.` with `([^`]+)`, .*?then `ERROR: ([^`]+)`",
                     " ".join(guide.split()))
    assert said, "the guide no longer quotes pip's messages for an unreachable index"
    assert "WARNING: Retrying" in done.stderr and said.group(1) in done.stderr, done.stderr
    assert f"ERROR: {said.group(2)}" in done.stderr, done.stderr


def test_every_guide_installs_torch_with_the_options_that_give_up_quickly() -> None:
    """The kit's guide and docs/checking.md's summary of it: each torch command from the PyTorch index carries the
    options, and the kit copies the guide whole."""
    assert GUIDES[0] == STUDENT_GUIDE
    for guide in GUIDES:
        commands = torch_commands(guide.read_text(encoding="utf-8"))
        assert commands, guide
        for words in commands:
            assert options(words).items() >= FAST_OPTIONS.items(), (guide.name, words)


def test_the_guide_says_what_to_do_where_the_index_is_out_of_reach() -> None:
    """The wheel file (named for the project's torch) or PyPI's build, with its size."""
    guide = " ".join(STUDENT_GUIDE.read_text(encoding="utf-8").split())
    pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pin
    start = guide.index(UNREACHABLE)
    advice = guide[start:guide.index("2. **Or PyTorch for an NVIDIA GPU**", start)]
    assert "python -m pip install FILE.whl" in advice
    assert f"torch-{pin.group(1)}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in advice
    assert "`python -m pip install torch`" in advice and "CUDA build, about 3 GB" in advice
    assert f'see "{UNREACHABLE}" in step 1' in guide  # where the torch line sends a student whose step 1 failed
