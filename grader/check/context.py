"""What a check function receives: the student's code, a seeded generator, and expectations that fail it."""

from __future__ import annotations

import numpy as np

from grader.check.compare import compare_tensor
from grader.errors import WrongAnswer
from grader.execute.student import StudentCode
from grader.execute.values import Returned


class CheckContext:
    def __init__(self, *, student: StudentCode, seed: int) -> None:
        self.student = student
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def expect_tensor(self, label: str, got: Returned | None, expected: np.ndarray, *,
                      rtol: float = 1e-4, atol: float = 1e-5) -> np.ndarray:
        """Fail unless ``got`` is a plain tensor equal to ``expected``; return the student's array."""
        mismatch = compare_tensor(label, got, np.asarray(expected), rtol=rtol, atol=atol)
        if mismatch is not None:
            raise WrongAnswer(mismatch.message, hint=mismatch.hint)
        assert got is not None and got.array is not None
        return got.array

    def expect(self, condition: bool, message: str, *, hint: str | None = None) -> None:
        if not condition:
            raise WrongAnswer(message, hint=hint or message)
