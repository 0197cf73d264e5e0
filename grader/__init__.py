"""Auto-grader for attention-mechanism assignments: sandboxed execution, NumPy/PyTorch references, HTML feedback."""

from grader import thread_safe_ast

__version__ = "0.1.0"

# Before any grading thread starts, whichever entry point imported the grader (the CLI, a job process, a Dask worker).
thread_safe_ast.install()
